package labs

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/util/jsonpath"

	"github.com/podpath/podpath/internal/names"
)

var idRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// Levels a lab may have.
var Levels = []string{"beginner", "intermediate", "advanced"}

type validator struct {
	lab      *Lab
	root     *yaml.Node
	file     string
	langs    []string
	display  func(string) string
	problems Problems
	// warnings are lints that do not fail a lab unless validation is
	// strict (podpath labs validate --strict).
	warnings Problems
	// requireTakeaways: the lab must have takeaways (built-in labs).
	requireTakeaways bool
	// broken are the fields YAML could not decode; what is wrong around
	// them follows from that and is already reported.
	broken []brokenField
	// custom are the resources the lab's CustomResourceDefinitions define.
	custom []kubeResource
}

// at records a problem at the YAML node found by path (keys and indexes).
// A path may end in a field that is missing: the problem is then at the
// line of the map that lacks it.
func (v *validator) at(where []any, format string, args ...any) {
	field := pathString(where)
	for _, b := range v.broken {
		if b.covers(field) {
			return
		}
	}
	v.problems = append(v.problems, Problem{File: v.file, Line: lineAt(v.root, where...), Field: field, Message: fmt.Sprintf(format, args...)})
}

// brokenUnder says whether YAML found a mistake in one of the fields of
// where (or under it).
func (v *validator) brokenUnder(where []any, fields ...string) bool {
	for _, f := range fields {
		at := pathString(append(slices.Clip(where), f))
		for _, b := range v.broken {
			if b.at == at || strings.HasPrefix(b.at, at+".") || strings.HasPrefix(b.at, at+"[") {
				return true
			}
		}
	}
	return false
}

// warn records a warning at the YAML node found by path, as at does a problem.
func (v *validator) warn(where []any, format string, args ...any) {
	before := len(v.problems)
	v.at(where, format, args...)
	if len(v.problems) > before {
		p := v.problems[before]
		p.Warning = true
		v.problems = v.problems[:before]
		v.warnings = append(v.warnings, p)
	}
}

func (v *validator) validate() {
	l := v.lab
	v.custom = v.customResources()
	if !idRE.MatchString(l.ID) {
		v.at([]any{"id"}, "id %q must be 1 to 63 lowercase letters, digits and dashes", l.ID)
	}
	v.text([]any{"title"}, "title", l.Title)
	v.text([]any{"summary"}, "summary", l.Summary)
	v.takeaways(l.Takeaways)
	if !slices.Contains(Levels, l.Level) {
		v.at([]any{"level"}, "level %q must be one of %s", l.Level, strings.Join(Levels, ", "))
	}
	if l.Minutes <= 0 {
		v.at([]any{"minutes"}, "minutes must say how long the lab takes, in minutes")
	}
	if l.Cluster.Workers < 0 || l.Cluster.Workers > 5 {
		v.at([]any{"cluster", "workers"}, "cluster.workers must be 0 to 5, not %d", l.Cluster.Workers)
	}
	if _, _, err := l.Cluster.Worker.Parse(); err != nil {
		v.at([]any{"cluster", "worker"}, "cluster.worker: %v", err)
	}
	if l.Cluster.Workers == 0 && l.Cluster.Worker != (NodeSize{}) {
		v.at([]any{"cluster", "worker"}, "cluster.worker sizes the workers, and this lab has none (cluster.workers: 0)")
	}
	v.values()
	for i := range l.Setup {
		v.action([]any{"setup", i}, &l.Setup[i], false)
	}
	for i := range l.Cleanup {
		v.action([]any{"cleanup", i}, &l.Cleanup[i], false)
	}
	if l.Cluster.Shared && len(l.Cleanup) == 0 {
		v.at([]any{"cluster", "shared"}, "a shared lab must have cleanup actions that leave the cluster as it found it")
	}
	if len(l.Steps) == 0 {
		v.at([]any{"steps"}, "a lab needs at least one step")
	}
	l.Intro = Text{}
	for _, lang := range v.langs {
		if b, err := l.Files("intro." + lang + ".md"); err == nil {
			l.Intro[lang] = string(b)
			v.markdown("intro."+lang+".md", string(b))
		}
	}
	seen := map[string]int{}
	for i := range l.Steps {
		v.step(i, &l.Steps[i], seen)
	}
	v.chinese()
}

func (v *validator) text(where []any, what string, t Text) {
	for _, lang := range v.langs {
		if strings.TrimSpace(t[lang]) == "" {
			v.at(where, "%s needs a %s text (%s: ...)", what, langName(lang), lang)
		}
	}
	for lang := range t {
		if !slices.Contains(Languages, lang) {
			v.at(where, "%s has a text in %q; languages are %s", what, lang, strings.Join(Languages, ", "))
		}
	}
}

// maxTakeaways is how many lines takeaways may have: the end of a lab shows
// them at a glance.
const maxTakeaways = 3

func (v *validator) takeaways(t Text) {
	if len(t) == 0 {
		if v.requireTakeaways {
			v.at([]any{"takeaways"}, "a built-in lab needs takeaways: two or three lines the learner should leave with, shown at the lab's end (takeaways: {en: ..., zh: ...})")
		}
		return
	}
	v.text([]any{"takeaways"}, "takeaways", t)
	for _, lang := range Languages {
		if n := len(Text{lang: t[lang]}.Lines(lang)); n > maxTakeaways {
			v.at([]any{"takeaways", lang}, "takeaways has %d lines in %s; keep to %d at most, one takeaway a line: the end of the lab shows them at a glance", n, langName(lang), maxTakeaways)
		}
	}
}

func langName(lang string) string {
	switch lang {
	case "en":
		return "English"
	case "zh":
		return "Chinese"
	}
	return lang
}

func (v *validator) step(i int, s *Step, seen map[string]int) {
	where := []any{"steps", i}
	if !idRE.MatchString(s.ID) {
		v.at(append(where, "id"), "step id %q must be lowercase letters, digits and dashes", s.ID)
	} else if first, ok := seen[s.ID]; ok {
		v.at(append(where, "id"), "duplicate step id %q (first used by step %d at line %d)", s.ID, first+1, lineAt(v.root, "steps", first, "id"))
	} else {
		seen[s.ID] = i
	}
	v.text(append(where, "title"), "step "+s.ID+" title", s.Title)
	if len(s.Layers) == 0 {
		v.at(append(where, "layers"), "step %s must name the layers it touches (layers: [...] from %s)", s.ID, strings.Join(Layers, ", "))
	}
	for j, layer := range s.Layers {
		if !slices.Contains(Layers, layer) {
			v.at(append(where, "layers", j), "unknown layer %q; layers are %s", layer, strings.Join(Layers, ", "))
		}
	}
	s.Body = Text{}
	for _, lang := range v.langs {
		name := "steps/" + s.ID + "." + lang + ".md"
		b, err := v.lab.Files(name)
		if err != nil {
			v.at(append(where, "id"), "missing Markdown file %s for step %s: write the step's text there", name, s.ID)
			continue
		}
		s.Body[lang] = string(b)
		v.markdown(name, string(b))
		if v.lab.Challenge {
			v.noCommands(name, string(b))
		}
	}
	if len(s.Checks) == 0 {
		v.at(append(where, "checks"), "step %s needs at least one check", s.ID)
	}
	for j := range s.Checks {
		v.check(append(where, "checks", j), &s.Checks[j])
	}
	if len(s.Solve) == 0 {
		v.at(append(where, "solve"), "step %s has no solve actions: skip and `podpath labs test` need them", s.ID)
	}
	for j := range s.Solve {
		v.action(append(where, "solve", j), &s.Solve[j], true)
	}
	v.answerLabel(where, s)
	v.historyOnly(where, s)
}

func (v *validator) check(where []any, c *Check) {
	v.text(append(where, "name"), "check name", c.Name)
	v.condition(where, c.Condition(), judged{})
	if len(c.Hints) == 0 {
		v.at(append(where, "hints"), "a check needs hints: what to look at when it fails (the first one should not give the answer away)")
	}
	for k, h := range c.Hints {
		v.text(append(where, "hints", k), "hint", h)
	}
	v.hintCount(where, c)
	for _, d := range []struct {
		name string
		d    Duration
		max  time.Duration
	}{{"within", c.Within, 10 * time.Minute}, {"holds", c.Holds, 5 * time.Minute}, {"timeout", c.Timeout, 5 * time.Minute}} {
		if d.d.D() > d.max {
			v.at(append(where, d.name), "%s %s is longer than the %s allowed", d.name, d.d.D(), d.max)
		}
	}
}

// judged says how a condition's verdict reaches its check: through an odd
// number of nots (negated), or as one part of allOf or anyOf (part).
type judged struct{ negated, part bool }

// cannotFail is how a lint says a matcher always accepts: the check, or
// the part of it, cannot fail (or, under a not, can never pass).
func (j judged) cannotFail(accepts bool) string {
	what := "the check"
	if j.part {
		what = "this part of the check"
	}
	if accepts != j.negated {
		return what + " cannot fail"
	}
	return what + " can never pass"
}

// condition validates a check's condition (where is the check) or one of
// allOf, anyOf and not (where is the condition): exactly one of probe (with
// expect), allOf, anyOf and not.
func (v *validator) condition(where []any, c *Condition, j judged) {
	// A key written with no value (allOf:) counts as set: it is what the
	// author chose, and its problem is that it is empty.
	has := func(key string, set bool) bool {
		return set || nodeAt(v.root, append(slices.Clip(where), key)...) != nil
	}
	var set []string
	for _, k := range []struct {
		key string
		set bool
	}{{"probe", len(c.Probe.kinds()) > 0}, {"allOf", c.AllOf != nil}, {"anyOf", c.AnyOf != nil}, {"not", c.Not != nil}} {
		if has(k.key, k.set) {
			set = append(set, k.key)
		}
	}
	what := "a check"
	if n := len(where); n > 0 && (where[n-1] == "not" || n > 1 && (where[n-2] == "allOf" || where[n-2] == "anyOf")) {
		what = "a condition"
	}
	switch {
	case len(set) == 0:
		if has("expect", len(c.Expect.kinds()) > 0) {
			v.at(append(where, "probe"), "%s has expect: but no probe: to read the value it judges", what)
			return
		}
		v.at(where, "%s needs probe: (with expect:) or one of allOf, anyOf, not", what)
		return
	case len(set) > 1:
		v.at(where, "%s sets %s; set exactly one of probe (with expect), allOf, anyOf, not", what, strings.Join(set, " and "))
		return
	}
	if key := set[0]; key != "probe" && has("observed", c.Observed != nil) {
		v.at(append(where, "observed"), "observed: belongs with a probe:, whose value it reads; give each condition of %s its own", key)
	}
	switch key := set[0]; key {
	case "probe":
		before := len(v.problems)
		v.probe(append(where, "probe"), &c.Probe)
		v.readings(where, c.Observed)
		if c.Probe.Script != nil {
			if len(c.Expect.kinds()) > 0 {
				v.at(append(where, "expect"), "a script check passes when its script exits 0; remove expect")
			}
			return
		}
		v.matcher(append(where, "expect"), &c.Expect, j)
		v.sameProbe(append(where, "expect"), &c.Probe, &c.Expect, j)
		v.answerCompared(where, c)
		// How a value reads is worth asking once the probe and the
		// matcher are right.
		if len(v.problems) == before && !v.brokenUnder(where, "probe", "expect") {
			v.needsReading(where, c)
		}
	case "allOf", "anyOf":
		if has("expect", len(c.Expect.kinds()) > 0) {
			v.at(append(where, "expect"), "expect: belongs with a probe:; each condition of %s has its own probe and expect", key)
		}
		parts := c.Parts()
		if len(parts) == 0 {
			v.at(append(where, key), "%s needs a list of conditions, each a probe: with its expect: (or allOf, anyOf, not)", key)
		}
		for i := range parts {
			v.condition(append(slices.Clip(where), key, i), &parts[i], judged{negated: j.negated, part: true})
		}
	case "not":
		if has("expect", len(c.Expect.kinds()) > 0) {
			v.at(append(where, "expect"), "expect: belongs with a probe:; write not: {probe: ..., expect: ...}")
		}
		if c.Not == nil {
			v.at(append(where, "not"), "`not:` has no value; give it a condition: not: {probe: ..., expect: ...}")
			return
		}
		v.condition(append(slices.Clip(where), "not"), c.Not, judged{negated: !j.negated, part: j.part})
	}
}

func (v *validator) probe(where []any, p *Probe) {
	kinds := p.kinds()
	switch {
	case len(kinds) == 0:
		if k := v.emptyKey(where, ProbeKinds); k == "answer" {
			v.at(append(where, k), "`answer:` has no value; an answer probe is written answer: {}")
		} else if k != "" {
			v.at(append(where, k), "`%s:` has no value; give the %s probe its fields", k, k)
		} else {
			v.at(where, "a probe needs one of %s", strings.Join(ProbeKinds, ", "))
		}
		return
	case len(kinds) > 1:
		v.at(where, "a probe sets %s; set exactly one", strings.Join(kinds, " and "))
		return
	}
	if p.NodeCondition == nil && p.Node() == "" && slices.Contains([]string{"command", "file", "crictl", "unit", "history", "script"}, kinds[0]) {
		v.at(append(where, kinds[0], "node"), "a %s probe needs node: (controlplane, node01, ...)", kinds[0])
	} else if n := p.Node(); n != "" {
		v.node(append(where, kinds[0], "node"), n)
	}
	switch {
	case p.Kube != nil:
		k := p.Kube
		if k.Resource == "" {
			v.at(append(where, "kube", "resource"), "a kube probe needs resource: (pods, nodes, deployments, ...)")
		}
		if k.Name != "" && (k.Selector != "" || k.FieldSelector != "") {
			v.at(append(where, "kube", "name"), "a kube probe reads one object by name or a list by selector, not both")
		}
		if k.Resource != "" {
			v.kubeResource(append(where, "kube", "resource"), k.Resource)
		}
		v.jsonpath(append(where, "kube", "jsonpath"), k.JSONPath)
	case p.NodeCondition != nil:
		if p.NodeCondition.Type == "" {
			v.at(append(where, "nodeCondition", "type"), "a nodeCondition probe needs type: (Ready, MemoryPressure, ...)")
		}
		if p.NodeCondition.Node == "" {
			v.at(append(where, "nodeCondition", "node"), "a nodeCondition probe needs node:")
		}
	case p.Events != nil:
		e := p.Events
		if e.Kind == "" || e.Name == "" {
			missing := "kind"
			if e.Kind != "" {
				missing = "name"
			}
			v.at(append(where, "events", missing), "an events probe needs kind: and name: of the object whose events to read")
		}
		if e.Kind != "" {
			v.eventsKind(append(where, "events", "kind"), e.Kind)
		}
		if !slices.Contains([]string{"", "reason", "component", "message", "reason component"}, e.Field) {
			v.at(append(where, "events", "field"), "field %q must be reason, component, message or \"reason component\"", e.Field)
		}
		v.eventsObject(append(where, "events"), e)
	case p.Command != nil:
		if strings.TrimSpace(p.Command.Run) == "" {
			v.at(append(where, "command", "run"), "a command probe needs run: (a shell command)")
		}
		if !slices.Contains([]string{"", "stdout", "exitCode"}, p.Command.Output) {
			v.at(append(where, "command", "output"), "output %q must be stdout or exitCode", p.Command.Output)
		}
	case p.File != nil:
		if !strings.HasPrefix(p.File.Path, "/") {
			v.at(append(where, "file", "path"), "a file probe needs an absolute path:")
		}
	case p.Crictl != nil:
		if strings.TrimSpace(p.Crictl.Command) == "" {
			v.at(append(where, "crictl", "command"), "a crictl probe needs command: (crictl's arguments, e.g. inspect <id>)")
		}
		v.jsonpath(append(where, "crictl", "jsonpath"), p.Crictl.JSONPath)
	case p.Unit != nil:
		if p.Unit.Unit == "" {
			v.at(append(where, "unit", "unit"), "a unit probe needs unit: (kubelet, containerd, ...)")
		}
	case p.History != nil:
		if _, err := regexp.Compile(p.History.Matches); err != nil || p.History.Matches == "" {
			v.at(append(where, "history", "matches"), "history needs matches: a regular expression (%v)", err)
		}
	case p.Script != nil:
		if strings.TrimSpace(p.Script.Script) == "" {
			v.at(append(where, "script", "script"), "a script probe needs script:")
		}
	}
}

func (v *validator) jsonpath(where []any, expr string) {
	if expr == "" {
		v.at(where, "jsonpath is required, e.g. {.status.phase}")
		return
	}
	if err := jsonpath.New("check").Parse(expr); err != nil {
		v.at(where, "jsonpath %q does not parse: %v", expr, err)
	}
}

// node checks that a node name exists in the lab's cluster shape.
func (v *validator) node(where []any, name string) {
	valid := names.Nodes(v.lab.Cluster.Workers)
	if !slices.Contains(valid, name) {
		v.at(where, "unknown node %q: this lab's cluster has %s", name, strings.Join(valid, ", "))
	}
}

func (v *validator) matcher(where []any, m *Matcher, j judged) {
	kinds := m.kinds()
	switch {
	case len(kinds) == 0:
		if k := v.emptyKey(where, matcherKinds); k != "" {
			v.at(append(where, k), "`%s:` has no value; to compare with an empty value write %s: \"\" or use empty: true", k, k)
		} else {
			v.at(where, "a check needs expect: with one of %s", strings.Join(matcherKinds, ", "))
		}
		return
	case len(kinds) > 1:
		v.at(where, "expect sets %s; set exactly one", strings.Join(kinds, " and "))
		return
	}
	if m.Matches != "" {
		if re, err := regexp.Compile(m.Matches); err != nil {
			v.at(append(where, "matches"), "matches %q is not a regular expression: %v", m.Matches, err)
		} else if matchesAnything(re) {
			v.at(append(where, "matches"), "matches %q accepts every value, even an empty one, so %s; write a pattern of what the right value looks like, or use nonEmpty: true to require a value", m.Matches, j.cannotFail(true))
		}
	}
	if m.Quantity != "" {
		// A quantity of the session's values ({{ .Values.mem }}Mi) is
		// judged as a sample session fills it.
		q, ferr := expand("quantity", m.Quantity, SampleData(v.lab))
		if ferr != nil {
			q = m.Quantity
		}
		if _, err := resource.ParseQuantity(strings.TrimSpace(q)); err != nil {
			v.at(append(where, "quantity"), "quantity %q is not a Kubernetes quantity; write it as in a Pod's resources: 128Mi, 1Gi, 250m, 0.5, 2", m.Quantity)
		}
	}
	if m.Count != nil {
		v.matcher(append(where, "count"), m.Count, j)
		if m.Count.SameAs != nil || m.Count.DiffersFrom != nil || m.Count.Count != nil {
			v.at(append(where, "count"), "count compares a number: use equals, gt, ge, lt or le inside it")
		}
		v.countBounds(where, m, j)
	}
	if m.SameAs != nil {
		v.probe(append(where, "sameAs"), m.SameAs)
	}
	if m.DiffersFrom != nil {
		v.probe(append(where, "differsFrom"), m.DiffersFrom)
	}
	if m.MinPrefix > 0 && m.SameAs == nil {
		v.at(append(where, "minPrefix"), "minPrefix only applies to sameAs")
	}
}

func (v *validator) action(where []any, a *Action, solve bool) {
	kind := a.Kind()
	if kind == "" {
		if k := v.emptyKey(where, []string{"apply", "delete", "copy", "run", "wait", "answer"}); k != "" {
			v.at(append(where, k), "`%s:` has no value", k)
		} else {
			v.at(where, "an action needs exactly one of apply, delete, copy, run, wait, answer")
		}
		return
	}
	if a.Node != "" {
		v.node(append(where, "node"), a.Node)
		if kind != "run" && kind != "copy" {
			v.at(append(where, "node"), "node applies to run and copy actions only")
		}
	}
	if (a.To != "") != (kind == "copy") || (kind == "copy" && !strings.HasPrefix(a.To, "/")) {
		v.at(append(where, "to"), "copy needs to: an absolute path on the node (and to: belongs to copy only)")
	}
	switch kind {
	case "apply", "delete":
		file := a.Apply + a.Delete
		b, err := v.lab.Files(file)
		if err != nil {
			v.at(append(where, kind), "%s names %s, which is not in the lab folder (%s)", kind, file, errMessage(err))
			return
		}
		v.manifest(where, file, b)
	case "copy":
		if _, err := v.lab.Files(a.Copy); err != nil {
			v.at(append(where, "copy"), "copy names %s, which is not in the lab folder (%s)", a.Copy, errMessage(err))
		}
	case "wait":
		v.probe(append(where, "wait", "probe"), &a.Wait.Probe)
		if a.Wait.Probe.Script == nil {
			v.matcher(append(where, "wait", "expect"), &a.Wait.Expect, judged{})
			v.sameProbe(append(where, "wait", "expect"), &a.Wait.Probe, &a.Wait.Expect, judged{})
		}
		if a.Wait.Timeout <= 0 {
			v.at(append(where, "wait", "timeout"), "wait needs timeout: (e.g. 60s)")
		}
	case "answer":
		if !solve {
			v.at(where, "answer actions belong in a step's solve")
		}
		v.probe(append(where, "answer"), a.Answer)
	}
}

// manifest checks that a manifest is YAML of Kubernetes objects (once
// filled with the sample values, when it uses the session's values).
func (v *validator) manifest(where []any, file string, b []byte) {
	if bytes.Contains(b, []byte("{{")) {
		s, err := expand(file, string(b), SampleData(v.lab))
		if err != nil {
			v.problems = append(v.problems, Problem{File: v.display(file), Message: valuesMessage(err)})
			return
		}
		b = []byte(s)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for i := 0; ; i++ {
		var obj map[string]any
		err := dec.Decode(&obj)
		if err == io.EOF {
			return
		}
		if err != nil {
			v.problems = append(v.problems, Problem{File: v.display(file), Message: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")})
			return
		}
		if obj == nil {
			continue
		}
		if obj["apiVersion"] == nil || obj["kind"] == nil {
			v.problems = append(v.problems, Problem{File: v.display(file), Message: fmt.Sprintf("document %d has no apiVersion or kind; every document must be a Kubernetes object", i+1)})
		}
	}
}

// markdown checks that a step's text is a valid template over TemplateData.
func (v *validator) markdown(name, body string) {
	t, err := template.New(name).Option("missingkey=error").Funcs(templateFuncs).Parse(body)
	if err != nil {
		v.problems = append(v.problems, Problem{File: v.display(name), Message: templateMessage(err)})
		return
	}
	if err := t.Execute(io.Discard, SampleData(v.lab)); err != nil {
		v.problems = append(v.problems, Problem{File: v.display(name), Message: templateMessage(err)})
	}
}

// noCommands refuses a command block in a challenge's text: a challenge
// gives the goal and lets the learner find the commands (fences for
// output, like ```text, are fine).
func (v *validator) noCommands(name, body string) {
	inFence := false
	for i, line := range strings.Split(body, "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "```") && !strings.HasPrefix(t, "~~~") {
			continue
		}
		if inFence {
			inFence = false
			continue
		}
		inFence = true
		lang, _, _ := strings.Cut(strings.TrimSpace(t[3:]), " ")
		switch lang {
		case "", "bash", "sh", "shell", "console", "zsh":
			v.problems = append(v.problems, Problem{File: v.display(name), Line: i + 1,
				Message: fmt.Sprintf("a challenge's text gives the goal, not the commands: this %q block is one to run (write what to reach in prose; a command may go in a later hint; output may stay in a ```text block)", t)})
		}
	}
}

func templateMessage(err error) string {
	return "template: " + noEntryRE.ReplaceAllString(strings.TrimPrefix(err.Error(), "template: "), `no value "$1" is declared under values:`) + " (step text may use {{ .Nodes.node01 }}, {{ .Images.Nginx }}, {{ .Images.Tools }}, {{ .Cluster }}, {{ .Values.NAME }})"
}

// lineAt finds the line of the YAML node at path (map keys and sequence
// indexes), or of the deepest node found on the way.
func lineAt(root *yaml.Node, path ...any) int {
	n := document(root)
	if n == nil {
		return 0
	}
	for _, p := range path {
		next := child(n, p)
		if next == nil {
			break
		}
		n = next
	}
	return n.Line
}
