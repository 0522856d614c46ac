package labs

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Lints: mistakes that YAML and the schema let through but that make a
// check useless, because it cannot fail, can never pass, or reads
// something the cluster does not have.

// customResources finds the CustomResourceDefinitions in the manifests the
// lab applies or copies, so that a probe may read the resources they
// define.
func (v *validator) customResources() []kubeResource {
	var files []string
	add := func(actions []Action) {
		for _, a := range actions {
			for _, f := range []string{a.Apply, a.Copy} {
				if f != "" && !slices.Contains(files, f) {
					files = append(files, f)
				}
			}
		}
	}
	add(v.lab.Setup)
	add(v.lab.Cleanup)
	for _, s := range v.lab.Steps {
		add(s.Solve)
	}
	var found []kubeResource
	for _, f := range files {
		b, err := v.lab.Files(f)
		if err != nil {
			continue
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var crd struct {
				Kind string `yaml:"kind"`
				Spec struct {
					Group string `yaml:"group"`
					Names struct {
						Plural     string   `yaml:"plural"`
						Singular   string   `yaml:"singular"`
						Kind       string   `yaml:"kind"`
						ShortNames []string `yaml:"shortNames"`
					} `yaml:"names"`
				} `yaml:"spec"`
			}
			err := dec.Decode(&crd)
			if err == io.EOF {
				break
			}
			if err != nil {
				// Not YAML of objects, or a document that is something
				// else; manifest() reports what matters.
				if _, ok := err.(*yaml.TypeError); !ok {
					break
				}
				continue
			}
			n := crd.Spec.Names
			if crd.Kind != "CustomResourceDefinition" || n.Plural == "" {
				continue
			}
			if n.Singular == "" {
				n.Singular = strings.ToLower(n.Kind)
			}
			found = append(found, kubeResource{plural: n.Plural, singular: n.Singular, kind: n.Kind, group: crd.Spec.Group, short: n.ShortNames})
		}
	}
	return found
}

// versionedGroupRE matches the version and group of deployments.v1.apps.
var versionedGroupRE = regexp.MustCompile(`^v\d+(?:(?:alpha|beta)\d+)?(?:\.(.*))?$`)

func (v *validator) resources() []kubeResource {
	return append(slices.Clip(builtinResources), v.custom...)
}

// kubeResource checks that a kube probe reads a resource the cluster has.
func (v *validator) kubeResource(where []any, name string) {
	all := v.resources()
	if _, ok := findResource(all, name); ok {
		return
	}
	res, group, grouped := strings.Cut(name, ".")
	known := builtinGroup(group) || slices.ContainsFunc(v.custom, func(r kubeResource) bool { return r.group == group })
	if grouped && !known {
		if m := versionedGroupRE.FindStringSubmatch(group); m != nil && (builtinGroup(m[1]) || slices.ContainsFunc(v.custom, func(r kubeResource) bool { return r.group == m[1] })) {
			// kubectl takes deployments.v1.apps; the grader looks a
			// resource up by name and group only.
			without := strings.TrimSuffix(res+"."+m[1], ".")
			v.at(where, "resource %q: write it without the API version, as %s", name, without)
		}
		// Otherwise a custom resource the lab installs some other way: we
		// cannot tell whether the cluster will have it.
		return
	}
	msg := fmt.Sprintf("unknown resource %q: Kubernetes 1.34 has no such built-in resource", name)
	if r, ok := findResource(all, res); ok && grouped {
		in := "the core group, so it is written without one"
		if r.group != "" {
			in = fmt.Sprintf("the group %s", r.group)
		}
		msg = fmt.Sprintf("resource %q: %s is in %s", name, r.plural, in)
	} else if guess := closest(res, resourceNames(all)); guess != "" {
		msg += fmt.Sprintf(" (did you mean `%s`?)", guess)
	}
	v.at(where, "%s; write it as kubectl takes it (pods, po, Pod, deployments.apps), and a custom resource with its API group (widgets.example.com)", msg)
}

// eventsKind checks the kind an events probe filters by: Kubernetes
// matches involvedObject.kind exactly, so "pod" finds no event of a Pod.
func (v *validator) eventsKind(where []any, kind string) {
	all := v.resources()
	var kinds []string
	for _, r := range all {
		if r.kind == kind {
			return
		}
		kinds = append(kinds, r.kind)
	}
	if r, ok := findResource(all, kind); ok {
		v.at(where, "events kind %q: write the kind as Kubernetes does, %s; events are picked by it exactly, so %q finds none", kind, r.kind, kind)
		return
	}
	if guess := closest(kind, kinds); guess != "" {
		v.at(where, "unknown kind %q (did you mean `%s`?); events are picked by the kind exactly", kind, guess)
	}
	// Anything else may be the kind of a custom resource.
}

// answerCompared checks how a check (or a condition of one) judges the
// learner's answer: only against the cluster, never against a value
// written in the lab.
func (v *validator) answerCompared(where []any, c *Condition) {
	if c.Probe.Answer == nil {
		return
	}
	switch k := c.Expect.Kind(); k {
	case "", "sameAs", "differsFrom":
	case "equals", "contains", "matches":
		if !perSession(c.Expect) {
			v.at(append(where, "expect", k), "the answer is compared with a value written in the lab (%s): anyone can read it here, and every session shares it; compare the answer with sameAs: and a probe that reads the real value, or with a value drawn per session ({{ .Values.NAME }})", k)
		}
	case "empty", "nonEmpty":
		v.at(append(where, "expect", k), "%s only asks whether an answer was typed, not whether it is right; compare the answer with sameAs: and a probe that reads the real value", k)
	default:
		v.at(append(where, "expect", k), "the answer is compared with a value written in the lab (%s): the learner's cluster may show another one, and anyone can read it here; compare the answer with sameAs: and a probe that reads the real value", k)
	}
}

// perSession says a matcher's literal is filled with a session's values.
func perSession(m Matcher) bool {
	s := m.Matches + m.Contains
	if m.Equals != nil {
		s += *m.Equals
	}
	return strings.Contains(s, "{{") && strings.Contains(s, ".Values.")
}

// sameProbe catches a comparison of a probe with itself.
func (v *validator) sameProbe(where []any, p *Probe, m *Matcher, j judged) {
	if m.SameAs != nil && reflect.DeepEqual(*p, *m.SameAs) {
		v.at(append(where, "sameAs"), "sameAs compares the probe with itself, so %s; compare with a probe that reads the value to check against", j.cannotFail(true))
	}
	if m.DiffersFrom != nil && reflect.DeepEqual(*p, *m.DiffersFrom) {
		v.at(append(where, "differsFrom"), "differsFrom compares the probe with itself, so %s; compare with a probe that reads the value to differ from", j.cannotFail(false))
	}
}

// anyValues are values a probe may read. A pattern that matches the empty
// value and all of these matches whatever the probe reads.
var anyValues = []string{"x", "0", "-1.5", "Running", "node01", "a b c", "/registry/pods/default/web", "FAIL: no", "\t ", "中文 ünï ✓",
	" !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"}

// matchesAnything says whether a pattern accepts every value, as .*, ^.*$
// and (?s).* do.
func matchesAnything(re *regexp.Regexp) bool {
	if !re.MatchString("") {
		return false
	}
	for _, s := range anyValues {
		if !re.MatchString(s) {
			return false
		}
	}
	return true
}

// countBounds catches a count compared with a bound no count can miss (or
// meet): a count is never negative.
func (v *validator) countBounds(where []any, m *Matcher, j judged) {
	c := m.Count
	switch {
	case c.GE != nil && *c.GE <= 0:
		v.at(append(where, "count", "ge"), "count ge %v always holds (a count is never negative), so %s", *c.GE, j.cannotFail(true))
	case c.GT != nil && *c.GT < 0:
		v.at(append(where, "count", "gt"), "count gt %v always holds (a count is never negative), so %s", *c.GT, j.cannotFail(true))
	case c.LT != nil && *c.LT <= 0:
		v.at(append(where, "count", "lt"), "count lt %v never holds (a count is never negative), so %s", *c.LT, j.cannotFail(false))
	case c.LE != nil && *c.LE < 0:
		v.at(append(where, "count", "le"), "count le %v never holds (a count is never negative), so %s", *c.LE, j.cannotFail(false))
	}
}

// answerLabel checks that a step that reads an answer asks a question, and
// that a step with a question reads the answer.
func (v *validator) answerLabel(where []any, s *Step) {
	switch {
	case s.NeedsAnswer() && len(s.Answer) == 0:
		v.at(append(where, "answer"), "step %s reads the learner's answer but has no answer: label, so the answer box asks nothing; add answer: {en: ..., zh: ...} with the question", s.ID)
	case s.NeedsAnswer():
		v.text(append(where, "answer"), "step "+s.ID+" answer label", s.Answer)
	case len(s.Answer) > 0:
		v.at(append(where, "answer"), "step %s has an answer: label but no check reads the answer (probe: {answer: {}}), so the label is never shown; remove it or add the check", s.ID)
	}
}

// eventsObject checks how an events probe picks events: pick, and the
// object by uid or uidOf, whose resource must be of the events' kind.
func (v *validator) eventsObject(where []any, e *EventsProbe) {
	if e.Pick != "" && e.Pick != "latest" {
		v.at(append(where, "pick"), "pick %q: the one pick is latest (only the newest event); leave pick out to read every event, oldest first", e.Pick)
	}
	if e.UID != "" && e.UIDOf != nil {
		v.at(append(where, "uid"), "an events probe picks its object by uid or by uidOf, not both")
		return
	}
	if e.UID != "" {
		v.warn(append(where, "uid"), "uid %q is the UID of an object of one cluster: every learner's object has another; pick the object that exists now with uidOf: {resource: ..., name: ...}", e.UID)
	}
	u := e.UIDOf
	if u == nil {
		return
	}
	where = append(where, "uidOf")
	if u.Resource == "" {
		v.at(append(where, "resource"), "uidOf needs resource: (pods, deployments.apps, ...), as a kube probe takes it")
	} else {
		v.kubeResource(append(where, "resource"), u.Resource)
		all := v.resources()
		kindKnown := slices.ContainsFunc(all, func(r kubeResource) bool { return r.kind == e.Kind })
		if r, ok := findResource(all, u.Resource); ok && kindKnown && r.kind != e.Kind {
			v.at(append(where, "resource"), "uidOf reads %s, but the events are of kind %s: no event of a %s has the UID of a %s; name the %s whose events to read", u.Resource, e.Kind, e.Kind, r.kind, e.Kind)
		}
	}
	name := u.Name
	if name == "" {
		name = e.Name
	}
	if strings.Contains(name, "*") {
		v.at(append(where, "name"), "uidOf reads one object: give it name: (the events probe's name %q is a prefix)", e.Name)
	}
}

// historyOnly warns of a step whose every check reads only the shell
// history: what the shell wrote is no proof that anything happened, so a
// step needs a check of the cluster, a node or the learner's answer too.
func (v *validator) historyOnly(where []any, s *Step) {
	history := false
	for i := range s.Checks {
		for _, c := range s.Checks[i].Conditions() {
			if c.Probe.History == nil {
				return
			}
			history = true
		}
	}
	if !history {
		return
	}
	v.warn(append(where, "checks"), "every check of step %s reads only the shell history, which says what was typed, not what it did; add a check of the cluster's or a node's state, or of an answer the learner can only find by doing the step", s.ID)
}
