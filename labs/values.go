package labs

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"text/template"
)

// Value is a value drawn for each session when it starts, so that no two
// sessions share answers: a name, a replica count, a limit, a port. Lab
// files refer to it as {{ .Values.name }}: manifests, setup, solves, checks,
// hints and step text. Exactly one of OneOf, Int and Word is set.
type Value struct {
	Name string `yaml:"name"`
	// OneOf draws one of these strings.
	OneOf []string `yaml:"oneOf,omitempty"`
	// Int draws a whole number from Min to Max (inclusive) in steps of Step.
	Int *IntRange `yaml:"int,omitempty"`
	// Word draws this many lowercase letters, for names.
	Word int `yaml:"word,omitempty"`
}

// IntRange is the range of an int value.
type IntRange struct {
	Min  int `yaml:"min"`
	Max  int `yaml:"max"`
	Step int `yaml:"step,omitempty"`
}

// Values are one session's drawn values by name.
type Values map[string]string

// valueNameRE is what a value's name may be: a Go template field.
var valueNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)

// wordLetters avoid letters that read alike (l, o) so a learner can type a
// drawn name they read off the screen.
const wordLetters = "abcdefghijkmnpqrstuvwxyz"

func (v *Value) kinds() []string {
	var k []string
	if len(v.OneOf) > 0 {
		k = append(k, "oneOf")
	}
	if v.Int != nil {
		k = append(k, "int")
	}
	if v.Word != 0 {
		k = append(k, "word")
	}
	return k
}

// choices is how many values v can take (capped: a word has plenty).
func (v *Value) choices() int {
	switch {
	case len(v.OneOf) > 0:
		return len(v.OneOf)
	case v.Int != nil:
		return (v.Int.Max-v.Int.Min)/v.Int.step() + 1
	}
	return 1 << 20
}

func (r *IntRange) step() int {
	if r.Step <= 0 {
		return 1
	}
	return r.Step
}

// draw picks one value; i >= 0 picks the i-th choice instead (the sample
// values the validator renders with).
func (v *Value) draw(r *rand.Rand, i int) string {
	n := v.choices()
	if i < 0 {
		i = r.IntN(n)
	}
	i %= n
	switch {
	case len(v.OneOf) > 0:
		return v.OneOf[i]
	case v.Int != nil:
		return strconv.Itoa(v.Int.Min + i*v.Int.step())
	}
	b := make([]byte, v.Word)
	for j := range b {
		b[j] = wordLetters[r.IntN(len(wordLetters))]
	}
	return string(b)
}

// Draw picks a session's values at random.
func (l *Lab) Draw(r *rand.Rand) Values {
	vals := Values{}
	for i := range l.Values {
		vals[l.Values[i].Name] = l.Values[i].draw(r, -1)
	}
	return vals
}

// DrawOther picks values that differ from prev in every value that can
// take two: another session's, for labs test to try as guesses.
func (l *Lab) DrawOther(r *rand.Rand, prev Values) Values {
	vals := Values{}
	for i := range l.Values {
		v := &l.Values[i]
		s := v.draw(r, -1)
		for try := 0; try < 64 && s == prev[v.Name] && v.choices() > 1; try++ {
			s = v.draw(r, -1)
		}
		vals[v.Name] = s
	}
	return vals
}

// Complete returns vals with a value drawn for each one the lab declares
// that vals lacks (a session started before its lab gained a value).
func (l *Lab) Complete(vals Values, r *rand.Rand) Values {
	out := Values{}
	for k, v := range vals {
		out[k] = v
	}
	for i := range l.Values {
		if _, ok := out[l.Values[i].Name]; !ok {
			out[l.Values[i].Name] = l.Values[i].draw(r, -1)
		}
	}
	return out
}

// SampleValues are the first choice of each value (a fixed draw).
func (l *Lab) SampleValues() Values {
	vals := Values{}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range l.Values {
		vals[l.Values[i].Name] = l.Values[i].draw(r, 0)
	}
	return vals
}

// templateFuncs do the arithmetic labs need to derive one value from
// another (a CPU limit of {{.Values.cpu}}m is a CFS quota of
// {{ mul .Values.cpu 100 }}).
var templateFuncs = template.FuncMap{
	"add": func(a, b any) (int, error) { return arith(a, b, func(x, y int) int { return x + y }) },
	"sub": func(a, b any) (int, error) { return arith(a, b, func(x, y int) int { return x - y }) },
	"mul": func(a, b any) (int, error) { return arith(a, b, func(x, y int) int { return x * y }) },
	"div": func(a, b any) (int, error) {
		if toInt(b) == 0 {
			return 0, fmt.Errorf("div by zero")
		}
		return arith(a, b, func(x, y int) int { return x / y })
	},
}

func toInt(a any) int {
	switch x := a.(type) {
	case int:
		return x
	case string:
		n, _ := strconv.Atoi(strings.TrimSpace(x))
		return n
	}
	return 0
}

func arith(a, b any, f func(x, y int) int) (int, error) {
	for _, v := range []any{a, b} {
		if s, ok := v.(string); ok {
			if _, err := strconv.Atoi(strings.TrimSpace(s)); err != nil {
				return 0, fmt.Errorf("%q is not a whole number", s)
			}
		}
	}
	return f(toInt(a), toInt(b)), nil
}

// expand fills s with data when it holds a template action.
func expand(name, s string, data TemplateData) (string, error) {
	if !strings.Contains(s, "{{") {
		return s, nil
	}
	t, err := template.New(name).Option("missingkey=error").Funcs(templateFuncs).Parse(s)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// FillError is a template in lab.yaml that does not fill: where, and why.
type FillError struct {
	Path []any
	Err  error
}

// For returns the lab as one session sees it: every string of lab.yaml
// (setup, cleanup, steps' checks, hints and solves) and every file of the
// lab folder filled with vals. Step text and the intro stay templates: the
// server renders them with the session's cluster (TemplateData.Values).
func (l *Lab) For(vals Values) (*Lab, error) {
	c, errs := l.fill(vals)
	if len(errs) > 0 {
		return nil, fmt.Errorf("lab %s at %s: %w", l.ID, pathString(errs[0].Path), errs[0].Err)
	}
	return c, nil
}

func (l *Lab) fill(vals Values) (*Lab, []FillError) {
	if len(l.Values) == 0 {
		return l, nil
	}
	data := TemplateData{Values: vals, Nodes: SampleData(l).Nodes}
	var errs []FillError
	fill := func(path []any, s string) string {
		out, err := expand(l.ID, s, data)
		if err != nil {
			errs = append(errs, FillError{Path: append([]any(nil), path...), Err: err})
		}
		return out
	}
	out := reflect.New(reflect.TypeFor[Lab]()).Elem()
	copyFilled(out, reflect.ValueOf(l).Elem(), fill, nil, true)
	c := out.Addr().Interface().(*Lab)
	// Lab-level texts name the lab in lists, before any session.
	c.Title, c.Summary = l.Title, l.Summary
	c.shared, c.sharedFS = l.shared, l.sharedFS
	files := l.Files
	c.Files = func(name string) ([]byte, error) {
		b, err := files(name)
		if err != nil || !bytes.Contains(b, []byte("{{")) {
			return b, err
		}
		s, err := expand(name, string(b), data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return []byte(s), nil
	}
	c.Vals = vals
	return c, errs
}

// copyFilled deep-copies src into dst, passing every string through fill
// with its path in lab.yaml. Fields the YAML does not set (yaml:"-": the
// folder, the file reader, texts read from Markdown) are copied as they are.
func copyFilled(dst, src reflect.Value, fill func([]any, string) string, path []any, doFill bool) {
	switch src.Kind() {
	case reflect.String:
		if doFill {
			dst.SetString(fill(path, src.String()))
		} else {
			dst.Set(src)
		}
	case reflect.Struct:
		t := src.Type()
		for i := 0; i < src.NumField(); i++ {
			if !t.Field(i).IsExported() {
				continue
			}
			tag, opts, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			fieldPath := append(path, tag)
			if tag == "" && opts == "inline" {
				fieldPath = path // its keys are the struct's: observed[0].en
			}
			copyFilled(dst.Field(i), src.Field(i), fill, fieldPath, doFill && tag != "-")
		}
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		copyFilled(p.Elem(), src.Elem(), fill, path, doFill)
		dst.Set(p)
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := 0; i < src.Len(); i++ {
			copyFilled(s.Index(i), src.Index(i), fill, append(path, i), doFill)
		}
		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		it := src.MapRange()
		for it.Next() {
			v := reflect.New(src.Type().Elem()).Elem()
			copyFilled(v, it.Value(), fill, append(path, it.Key().String()), doFill)
			m.SetMapIndex(it.Key(), v)
		}
		dst.Set(m)
	default:
		dst.Set(src)
	}
}

// values checks the lab's values and that every template in lab.yaml fills
// with them.
func (v *validator) values() {
	seen := map[string]bool{}
	for i := range v.lab.Values {
		val := &v.lab.Values[i]
		where := []any{"values", i}
		switch {
		case !valueNameRE.MatchString(val.Name):
			v.at(append(where, "name"), "value name %q must be a letter then letters and digits (it is written {{ .Values.%s }})", val.Name, val.Name)
		case seen[val.Name]:
			v.at(append(where, "name"), "value %q is declared twice", val.Name)
		}
		seen[val.Name] = true
		switch k := val.kinds(); len(k) {
		case 0:
			v.at(where, "value %q needs one of oneOf: [a, b, ...], int: {min, max}, word: N", val.Name)
			continue
		case 1:
		default:
			v.at(where, "value %q has %s; give it only one", val.Name, strings.Join(k, " and "))
			continue
		}
		switch {
		case len(val.OneOf) > 0:
			dup := map[string]bool{}
			for _, o := range val.OneOf {
				if dup[o] {
					v.at(append(where, "oneOf"), "value %q lists %q twice", val.Name, o)
				}
				dup[o] = true
			}
		case val.Int != nil:
			if val.Int.Min >= val.Int.Max {
				v.at(append(where, "int"), "value %q: min %d must be below max %d", val.Name, val.Int.Min, val.Int.Max)
			}
			if val.Int.Step < 0 {
				v.at(append(where, "int", "step"), "value %q: step must be positive", val.Name)
			}
		case val.Word < 3 || val.Word > 16:
			v.at(append(where, "word"), "value %q: a word of %d letters; give 3 to 16", val.Name, val.Word)
		}
		if (val.Int == nil || val.Int.Min < val.Int.Max) && val.choices() < 2 {
			v.at(where, "value %q can take only one value, so every session shares it; give it at least two", val.Name)
		}
	}
	_, errs := v.lab.fill(v.lab.SampleValues())
	for _, e := range errs {
		v.at(e.Path, "%s", valuesMessage(e.Err))
	}
}

var noEntryRE = regexp.MustCompile(`map has no entry for key "([^"]*)"`)

func valuesMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "template: ")
	msg = noEntryRE.ReplaceAllString(msg, `no value "$1" is declared under values:`)
	return "template: " + msg + " (lab files may use {{ .Values.NAME }} for a value declared under values:, and add, sub, mul, div on them)"
}
