package labs

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// This file turns what the YAML decoder says into problems a lab author can
// act on: every mistake in one report, each at its line and field, in the
// lab format's words rather than Go's.

// spot is a node of lab.yaml and what the lab format wants there.
type spot struct {
	node   *yaml.Node
	key    *yaml.Node // the mapping key that names it, if any
	holder *yaml.Node // the mapping or sequence it is in
	path   []any      // keys and indexes from the top of the file
	// want is the Go type the node decodes into (pointers removed); nil
	// for a key the struct it is in does not have.
	want reflect.Type
	// in is the struct whose field the node is, if it is one.
	in reflect.Type
}

var (
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	durationType    = reflect.TypeFor[Duration]()
	textType        = reflect.TypeFor[Text]()
)

// spots lists every node of the document with the type it decodes into.
func spots(doc *yaml.Node) []spot {
	var out []spot
	var walk func(n, key, holder *yaml.Node, t, in reflect.Type, path []any, depth int)
	walk = func(n, key, holder *yaml.Node, t, in reflect.Type, path []any, depth int) {
		if n == nil || depth > 100 {
			return
		}
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		out = append(out, spot{node: n, key: key, holder: holder, path: path, want: t, in: in})
		if n.Kind == yaml.AliasNode {
			walk(n.Alias, key, holder, t, in, path, depth+1)
			return
		}
		if reflect.PointerTo(t).Implements(unmarshalerType) {
			return
		}
		switch t.Kind() {
		case reflect.Struct:
			if n.Kind != yaml.MappingNode {
				return
			}
			_, types := yamlFields(t)
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if isMergeKey(k) {
					merged := []*yaml.Node{v}
					if v.Kind == yaml.SequenceNode {
						merged = v.Content
					}
					for _, m := range merged {
						walk(m, nil, n, t, in, path, depth+1)
					}
					continue
				}
				p := appendPath(path, k.Value)
				ft, ok := types[k.Value]
				if !ok {
					if m := inlineMap(t); m != nil {
						// A key of the map the struct inlines: a
						// reading's en: beside its equals:.
						walk(v, k, n, m.Elem(), nil, p, depth+1)
						continue
					}
					out = append(out, spot{node: k, key: k, holder: n, path: p, in: t})
					continue
				}
				walk(v, k, n, ft, t, p, depth+1)
			}
		case reflect.Map:
			if n.Kind != yaml.MappingNode {
				return
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], n.Content[i], n, t.Elem(), nil, appendPath(path, n.Content[i].Value), depth+1)
			}
		case reflect.Slice:
			if n.Kind != yaml.SequenceNode {
				return
			}
			for i, c := range n.Content {
				walk(c, nil, n, t.Elem(), nil, appendPath(path, i), depth+1)
			}
		}
	}
	if doc != nil && doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		walk(doc.Content[0], nil, doc, reflect.TypeFor[Lab](), nil, nil, 0)
	}
	return out
}

// inlineMap is the type of the map struct t inlines (yaml:",inline"), which
// takes every key that names none of t's fields; nil when it has none.
func inlineMap(t reflect.Type) reflect.Type {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Tag.Get("yaml") == ",inline" && f.Type.Kind() == reflect.Map {
			return f.Type
		}
	}
	return nil
}

func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge"
}

func appendPath(path []any, p any) []any {
	return append(slices.Clip(path), p)
}

// yamlFields returns the YAML names of a struct's fields, in order, and the
// type of each. A map the struct inlines has no name of its own: its keys
// are the struct's other keys (see inlineMap).
func yamlFields(t reflect.Type) ([]string, map[string]reflect.Type) {
	var names []string
	types := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || (name == "" && opts == "inline") {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		names = append(names, name)
		types[name] = f.Type
	}
	return names, types
}

// pathString writes a path the way Kubernetes names fields:
// steps[2].checks[0].expect.ge.
func pathString(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch k := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", k)
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(k)
		}
	}
	return b.String()
}

// brokenField is a field whose value was wrong or whose name was unknown.
// Problems the validator finds there, under it, or in the map holding it
// follow from that one mistake and are not reported again.
type brokenField struct {
	at, in string
}

func brokenAt(path []any) brokenField {
	if len(path) == 0 {
		return brokenField{}
	}
	return brokenField{at: pathString(path), in: pathString(path[:len(path)-1])}
}

func (b brokenField) covers(field string) bool {
	return b.at == "" || field == b.in || field == b.at || strings.HasPrefix(field, b.at+".") || strings.HasPrefix(field, b.at+"[")
}

// decodeLab decodes the node tree of lab.yaml. A value of the wrong type is
// a problem; it is replaced by an empty value of the right type and the
// tree decoded again, so that one run reports every such mistake and the
// rest of the lab can still be validated. ok is false when the lab cannot
// be validated at all.
func decodeLab(doc *yaml.Node, raw []byte, file string) (lab *Lab, ps Problems, broken []brokenField, ok bool) {
	ps, broken = unknownFields(spots(doc), file)
	ps = append(ps, missedUnknownFields(raw, file, ps)...)
	seen := map[string]bool{}
	for pass := 0; pass < 50; pass++ {
		all := spots(doc)
		fillEmptyItems(all)
		lab = &Lab{}
		err := doc.Decode(lab)
		if err == nil {
			return lab, ps, broken, true
		}
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return nil, append(ps, yamlProblems(file, err)...), broken, false
		}
		fixed, unplaced := 0, 0
		used := map[*yaml.Node]bool{}
		for _, m := range te.Errors {
			p, b, patched := typeProblem(all, used, m, file)
			if patched {
				fixed++
				broken = append(broken, b)
			} else {
				unplaced++
			}
			if !seen[p.String()] {
				seen[p.String()] = true
				ps = append(ps, p)
			}
		}
		if unplaced > 0 || fixed == 0 {
			// A problem we cannot place would make the validator's lines
			// and follow-up problems unreliable: report what YAML said.
			return nil, ps, broken, false
		}
	}
	return nil, ps, broken, false
}

// fillEmptyItems turns an empty item of a list of structs ("- " alone) into
// an empty map: YAML would drop it, and every later item's index would no
// longer match its node.
func fillEmptyItems(all []spot) {
	for _, s := range all {
		if s.key == nil && s.holder != nil && s.holder.Kind == yaml.SequenceNode && s.want != nil && s.want.Kind() == reflect.Struct &&
			s.node.Kind == yaml.ScalarNode && s.node.ShortTag() == "!!null" {
			*s.node = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: yaml.FlowStyle, Line: s.node.Line, Column: s.node.Column}
		}
	}
}

// unknownFields reports the keys that name no field of the struct they are in.
func unknownFields(all []spot, file string) (Problems, []brokenField) {
	var ps Problems
	var broken []brokenField
	for _, s := range all {
		if s.want != nil || s.in == nil {
			continue
		}
		names, _ := yamlFields(s.in)
		name := s.key.Value
		guess := closest(name, names)
		parent := s.path[:len(s.path)-1]
		broken = append(broken, brokenAt(s.path))
		if guess != "" {
			broken = append(broken, brokenAt(appendPath(parent, guess)))
		}
		ps = append(ps, Problem{File: file, Line: s.key.Line, Field: pathString(s.path), Message: unknownFieldMessage(name, s.in, guess)})
	}
	return ps, broken
}

func unknownFieldMessage(name string, in reflect.Type, guess string) string {
	mean := ""
	if guess != "" {
		mean = fmt.Sprintf(" (did you mean `%s`?)", guess)
	}
	switch in {
	case reflect.TypeFor[Probe]():
		return fmt.Sprintf("unknown probe %q%s; a probe is one of %s", name, mean, strings.Join(ProbeKinds, ", "))
	case reflect.TypeFor[Matcher]():
		return fmt.Sprintf("unknown matcher %q%s; expect takes one of %s (with minPrefix, ignoreCase)", name, mean, strings.Join(matcherKinds, ", "))
	case reflect.TypeFor[Action]():
		return fmt.Sprintf("unknown action %q%s; an action is one of apply, delete, copy (with to, node), run (with node, allowFail), wait, answer", name, mean)
	case reflect.TypeFor[Condition]():
		if checkFields, _ := yamlFields(reflect.TypeFor[Check]()); slices.Contains(checkFields, name) {
			return fmt.Sprintf("`%s` belongs to the check, not to a condition of allOf, anyOf or not: name, within, holds, timeout and hints apply to the whole check", name)
		}
		return fmt.Sprintf("unknown field %q in a condition%s; a condition is a probe: with its expect:, or one of %s", name, mean, strings.Join(Combinators, ", "))
	}
	names, _ := yamlFields(in)
	msg := fmt.Sprintf("unknown field %q in %s", name, typeWord(in))
	if guess != "" {
		return msg + "; did you mean `" + guess + "`?"
	}
	if len(names) == 0 {
		return msg + ", which has no fields"
	}
	return msg + "; its fields are " + strings.Join(names, ", ")
}

var matcherKinds = []string{"equals", "notEquals", "matches", "contains", "notContains", "empty", "nonEmpty", "gt", "ge", "lt", "le", "count", "sameAs", "differsFrom"}

// missedUnknownFields asks the YAML decoder itself for unknown fields, in
// case it knows of one the walk over the tree did not find (in a merged map,
// say), so that no unknown field goes unreported.
func missedUnknownFields(raw []byte, file string, found Problems) Problems {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var te *yaml.TypeError
	if err := dec.Decode(&Lab{}); !errors.As(err, &te) {
		return nil
	}
	var ps Problems
	for _, m := range te.Errors {
		sub := notFoundRE.FindStringSubmatch(m)
		if sub == nil {
			continue
		}
		line, _ := strconv.Atoi(sub[1])
		if !slices.ContainsFunc(found, func(p Problem) bool {
			return p.Line == line && strings.HasSuffix(p.Field, sub[2])
		}) {
			ps = append(ps, yamlProblems(file, &yaml.TypeError{Errors: []string{m}})...)
		}
	}
	return ps
}

var (
	notFoundRE = regexp.MustCompile(`^line (\d+): field (.+) not found in type (\S+)$`)
	typeErrRE  = regexp.MustCompile("(?s)^line (\\d+): cannot unmarshal (\\S+)(?: `.*`)? into (\\S+)$")
	dupKeyRE   = regexp.MustCompile(`^line (\d+): mapping key (".*") already defined at line (\d+)$`)
)

// typeProblem turns one message of the YAML decoder into a problem. When it
// finds the node the message is about, it patches the node so the next
// decoding passes there, and says which field was broken.
func typeProblem(all []spot, used map[*yaml.Node]bool, msg, file string) (Problem, brokenField, bool) {
	if sub := typeErrRE.FindStringSubmatch(msg); sub != nil {
		line, _ := strconv.Atoi(sub[1])
		tag, into := sub[2], sub[3]
		var found *spot
		for _, tagMatters := range []bool{true, false} {
			for i := range all {
				s := &all[i]
				if s.want == nil || used[s.node] || s.node.Line != line || s.want.String() != into || (tagMatters && s.node.ShortTag() != tag) {
					continue
				}
				found = s
				break
			}
			if found != nil {
				break
			}
		}
		if found != nil {
			used[found.node] = true
			if found.key != nil {
				// The line of the field, as the validator's problems
				// have; a map or list value may start on the next.
				line = found.key.Line
			}
			p := Problem{File: file, Line: line, Field: pathString(found.path), Message: typeMessage(found)}
			emptyValue(found.node, found.want)
			return p, brokenAt(found.path), true
		}
	}
	if sub := dupKeyRE.FindStringSubmatch(msg); sub != nil {
		line, _ := strconv.Atoi(sub[1])
		first, _ := strconv.Atoi(sub[3])
		name, err := strconv.Unquote(sub[2])
		if err == nil {
			for _, s := range all {
				if s.key == nil || used[s.key] || s.key.Line != line || s.key.Value != name || s.holder.Kind != yaml.MappingNode {
					continue
				}
				i := slices.Index(s.holder.Content, s.key)
				if i < 0 || i%2 != 0 {
					continue
				}
				used[s.key] = true
				s.holder.Content = slices.Delete(s.holder.Content, i, i+2)
				p := Problem{File: file, Line: line, Field: pathString(s.path), Message: fmt.Sprintf("`%s` is set twice (first at line %d); keep one", name, first)}
				return p, brokenAt(s.path), true
			}
		}
	}
	ps := yamlProblems(file, &yaml.TypeError{Errors: []string{msg}})
	return ps[0], brokenField{}, false
}

// emptyValue makes n an empty value of type t, so that it decodes.
func emptyValue(n *yaml.Node, t reflect.Type) {
	e := yaml.Node{Kind: yaml.ScalarNode, Line: n.Line, Column: n.Column}
	switch {
	case t == durationType:
		e.Tag, e.Value = "!!str", "0s"
	case t.Kind() == reflect.Struct || t.Kind() == reflect.Map:
		e.Kind, e.Tag, e.Style = yaml.MappingNode, "!!map", yaml.FlowStyle
	case t.Kind() == reflect.Slice:
		e.Kind, e.Tag, e.Style = yaml.SequenceNode, "!!seq", yaml.FlowStyle
	case t.Kind() == reflect.Bool:
		e.Tag, e.Value = "!!bool", "false"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Float64:
		e.Tag, e.Value = "!!int", "0"
	default:
		e.Tag, e.Value = "!!str", ""
	}
	*n = e
}

// fieldName is how a message names the field at path: ge, hints[0],
// title.en.
func fieldName(s *spot) string {
	path := s.path
	if len(path) == 0 {
		return "lab.yaml"
	}
	switch last := path[len(path)-1].(type) {
	case int:
		if len(path) > 1 {
			return pathString(path[len(path)-2:])
		}
		return fmt.Sprintf("[%d]", last)
	case string:
		if s.in == nil && len(path) > 2 {
			if _, item := path[len(path)-2].(int); item {
				// A key of a list item's inlined map: observed[0].en.
				return pathString(path[len(path)-3:])
			}
		}
		if s.in == nil && len(path) > 1 {
			// An entry of a map, such as a text's language.
			return pathString(path[len(path)-2:])
		}
		return last
	}
	return pathString(path)
}

// typeMessage says in plain words what the field wants and what it got.
func typeMessage(s *spot) string {
	n := s.node
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	name := fieldName(s)
	got := gotWords(n)
	scalar := n.Kind == yaml.ScalarNode
	quoted := scalar && n.ShortTag() == "!!str" && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0
	t := s.want
	switch {
	case t == durationType:
		if scalar {
			if d, err := time.ParseDuration(strings.TrimSpace(n.Value)); err == nil && d < 0 {
				return fmt.Sprintf("`%s` must not be negative, got %s", name, n.Value)
			}
			if _, err := strconv.ParseFloat(n.Value, 64); err == nil {
				return fmt.Sprintf("`%s` wants a duration with a unit, like %ss or 2m, got %s", name, n.Value, n.Value)
			}
		}
		return fmt.Sprintf("`%s` wants a duration like 30s or 2m, got %s", name, got)
	case t == textType:
		example := "..."
		if scalar && n.Value != "" {
			example = n.Value
		}
		return fmt.Sprintf("`%s` wants a text in each language, like {en: %s, zh: ...}, got %s", name, example, got)
	}
	switch t.Kind() {
	case reflect.String:
		msg := fmt.Sprintf("`%s` wants a single value, got %s", name, got)
		if n.Kind == yaml.MappingNode {
			msg += `; a value with ": " in it needs quotes`
		}
		return msg
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		msg := fmt.Sprintf("`%s` wants a whole number, got %s", name, got)
		if _, err := strconv.Atoi(strings.TrimSpace(n.Value)); err == nil && quoted {
			msg += "; write it without quotes"
		}
		return msg
	case reflect.Float32, reflect.Float64:
		msg := fmt.Sprintf("`%s` wants a number, got %s", name, got)
		if _, err := strconv.ParseFloat(strings.TrimSpace(n.Value), 64); err == nil && quoted {
			msg += "; write it without quotes"
		}
		return msg
	case reflect.Bool:
		msg := fmt.Sprintf("`%s` wants true or false, got %s", name, got)
		if _, err := strconv.ParseBool(strings.TrimSpace(n.Value)); err == nil && quoted {
			msg += "; write it without quotes"
		}
		return msg
	case reflect.Slice:
		if t == reflect.TypeFor[[]Reading]() {
			return fmt.Sprintf("`%s` wants a list of readings, like [{en: \"{value} Pods\", zh: \"{value} 个 Pod\"}], got %s", name, got)
		}
		if scalar && n.Value != "" {
			return fmt.Sprintf("`%s` wants a list, like [%s], got %s", name, n.Value, got)
		}
		return fmt.Sprintf("`%s` wants a list (lines starting with -, or [a, b]), got %s", name, got)
	case reflect.Struct:
		return fmt.Sprintf("`%s` wants %s, got %s", name, structWords(t), got)
	case reflect.Map:
		return fmt.Sprintf("`%s` wants a map (key: value lines), got %s", name, got)
	}
	return fmt.Sprintf("`%s` has the wrong kind of value: %s", name, got)
}

func structWords(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[Probe]():
		return "a probe: one of " + strings.Join(ProbeKinds, ", ") + ", with its fields"
	case reflect.TypeFor[Matcher]():
		return "a matcher: one of " + strings.Join(matcherKinds, ", ")
	case reflect.TypeFor[Action]():
		return "an action: one of apply, delete, copy, run, wait, answer"
	case reflect.TypeFor[AnswerProbe]():
		return "{} (an answer probe has no fields)"
	case reflect.TypeFor[Condition]():
		return "a condition: a probe: with its expect:, or one of " + strings.Join(Combinators, ", ")
	case reflect.TypeFor[Reading]():
		return "a reading: a text in each language, like {en: \"{value} Pods\", zh: ...}, with equals: or matches: when it is for some values only"
	}
	names, _ := yamlFields(t)
	return "a map of its fields (" + strings.Join(names, ", ") + ")"
}

// gotWords names a value as an author would: "abc", 42, a list, a map.
func gotWords(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a map"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "nothing"
		case "!!str":
			v := n.Value
			if r := []rune(v); len(r) > 40 {
				v = string(r[:37]) + "..."
			}
			return strconv.Quote(v)
		}
		return n.Value
	}
	return "something else"
}

// typeWord names a struct of the lab format: "a check", "a kube probe".
func typeWord(t reflect.Type) string {
	if w := typeWords[t.String()]; w != "" {
		return w
	}
	return t.Name()
}

// yamlTypeError writes a problem with node n the way the YAML decoder does,
// so that it is placed and worded like the decoder's own.
func yamlTypeError(n *yaml.Node, into string) error {
	value := ""
	if n.Kind == yaml.ScalarNode {
		value = n.Value
		if len(value) > 10 {
			value = value[:7] + "..."
		}
		value = " `" + value + "`"
	}
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: cannot unmarshal %s%s into %s", n.Line, n.ShortTag(), value, into)}}
}

// closest returns the name in names nearest to s, when it is near enough to
// be what the author meant; "" otherwise.
func closest(s string, names []string) string {
	ls := strings.ToLower(s)
	max := 1
	switch n := len([]rune(ls)); {
	case n > 8:
		max = 3
	case n > 4:
		max = 2
	}
	best, bestD := "", max+1
	for _, name := range names {
		if d := editDistance(ls, strings.ToLower(name)); d < bestD {
			best, bestD = name, d
		}
	}
	return best
}

// editDistance is the number of one-letter insertions, deletions,
// substitutions and swaps of neighbours that turn a into b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// emptyKey finds a key among names that is in the map at path with no
// value: `answer:` where `answer: {}` was meant.
func (v *validator) emptyKey(where []any, names []string) string {
	n := nodeAt(v.root, where...)
	if n == nil || n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if slices.Contains(names, k.Value) && val.Kind == yaml.ScalarNode && val.ShortTag() == "!!null" {
			return k.Value
		}
	}
	return ""
}

// nodeAt finds the YAML node at path (map keys and sequence indexes), or nil.
func nodeAt(root *yaml.Node, path ...any) *yaml.Node {
	n := document(root)
	for _, p := range path {
		if n == nil {
			return nil
		}
		n = child(n, p)
	}
	return n
}

// document is the top node of a parsed file.
func document(root *yaml.Node) *yaml.Node {
	if root != nil && root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		return root.Content[0]
	}
	return root
}

// child is the value under map key p (a string) or the item at index p (an
// int) of n, or nil.
func child(n *yaml.Node, p any) *yaml.Node {
	switch key := p.(type) {
	case string:
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == key {
					return n.Content[i+1]
				}
			}
		}
	case int:
		if n.Kind == yaml.SequenceNode && key >= 0 && key < len(n.Content) {
			return n.Content[key]
		}
	}
	return nil
}
