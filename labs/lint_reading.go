package labs

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/client-go/util/jsonpath"
)

// needsReading warns of a condition whose value would reach the learner as
// it was read, with no reading (observed:) to say what it means: "1",
// "Pending/;" or "true true" is the grader's business, not a learner's.
// A value needs a reading when it is
//
//   - what the lab's own command prints, or its exit code, or a file's
//     content: only the lab knows what they mean;
//   - two or more fields a JSONPath joins ({.status.phase}/{.spec.nodeName},
//     a {range}), with the lab's own separators;
//   - a number or true/false: the matcher compares numbers (gt, ge, lt, le,
//     quantity, count), or equals (notEquals) a number or true/false.
//
// Other values read as they are and need none: a state, a name or an event
// reason (Running, node01, Scheduled: the glossary keeps them verbatim),
// the learner's answer and shell history, a script's verdict, a unit's or a
// Node condition's state (the grader names the unit or the condition).
func (v *validator) needsReading(where []any, c *Condition) {
	if len(c.Observed) > 0 {
		return
	}
	why := rawValue(c)
	if why == "" {
		return
	}
	v.warn(append(where, "observed"), "the lab page would show %s as read, which says little to a learner; add observed: with how it reads in each language, {value} where the value goes, and equals: or matches: for values that need words of their own ([{equals: \"0\", en: no Pod is running, zh: 没有 Pod 在运行}, {en: \"{value} Pods are running\", zh: \"有 {value} 个 Pod 在运行\"}])", why)
}

// numberOrBoolRE is a literal that is numbers or booleans: "4", "0.5",
// "true", "true true".
var numberOrBoolRE = regexp.MustCompile(`(?i)^\s*(-?[0-9]+(\.[0-9]+)?|true|false)(\s+(-?[0-9]+(\.[0-9]+)?|true|false))*\s*$`)

// rawValue says what raw value a condition shows, if it shows one that
// needs a reading; "" otherwise.
func rawValue(c *Condition) string {
	p, m := &c.Probe, &c.Expect
	switch {
	case p.Answer != nil, p.History != nil, p.Script != nil, p.Unit != nil, p.NodeCondition != nil:
		return ""
	case p.Command != nil && p.Command.Output == "exitCode":
		return "the command's exit code"
	case p.Command != nil:
		return "what the command prints"
	case p.File != nil:
		return "the file's content"
	case p.Kube != nil && joinsFields(p.Kube.JSONPath):
		return fmt.Sprintf("the fields %s joins", p.Kube.JSONPath)
	case p.Crictl != nil && joinsFields(p.Crictl.JSONPath):
		return fmt.Sprintf("the fields %s joins", p.Crictl.JSONPath)
	}
	switch {
	case m.Count != nil:
		return "the values it counts"
	case m.GT != nil || m.GE != nil || m.LT != nil || m.LE != nil || m.Quantity != "":
		return "a bare number"
	case m.Equals != nil && numberOrBoolRE.MatchString(*m.Equals), m.NotEquals != nil && numberOrBoolRE.MatchString(*m.NotEquals):
		return "a bare number or true/false"
	}
	return ""
}

// joinsFields says whether a JSONPath prints more than one field, or text
// of its own between them.
func joinsFields(expr string) bool {
	p, err := jsonpath.Parse("probe", strings.TrimSpace(expr))
	if err != nil || p.Root == nil {
		return false // reported as a JSONPath that does not parse
	}
	if len(p.Root.Nodes) > 1 {
		return true
	}
	return len(p.Root.Nodes) == 1 && p.Root.Nodes[0].Type() == jsonpath.NodeText
}
