package labs

import (
	"strings"
	"testing"
)

// A value the learner would read raw ("1", "Pending/;", "true true") with
// no reading is a warning at the check, in the lab's file and line; strict
// validation (the built-in labs) makes it a problem. A value that reads
// as it is needs none.
func TestRawValueWantsAReading(t *testing.T) {
	const first = `          kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}
        expect: {equals: Running}
`
	cases := []struct {
		name, check, why string
	}{
		{"exit code", "          command: {node: node01, run: \"test -e /x\", output: exitCode}\n        expect: {equals: \"1\"}\n", "the command's exit code"},
		{"command output", "          command: {node: node01, run: \"echo ok\"}\n        expect: {equals: ok}\n", "what the command prints"},
		{"file", "          file: {node: node01, path: /etc/hostname}\n        expect: {nonEmpty: true}\n", "the file's content"},
		{"joined fields", "          kube: {resource: pods, name: web, jsonpath: \"{.status.phase}/{.spec.nodeName}\"}\n        expect: {equals: Running/node01}\n", "the fields {.status.phase}/{.spec.nodeName} joins"},
		{"a range", "          kube: {resource: pods, jsonpath: \"{range .items[*]}{.status.phase};{end}\"}\n        expect: {equals: \"Running;\"}\n", "the fields {range .items[*]}{.status.phase};{end} joins"},
		{"a count", "          kube: {resource: pods, jsonpath: \"{.items[*].metadata.name}\"}\n        expect: {count: {equals: \"2\"}}\n", "the values it counts"},
		{"a number", "          kube: {resource: pods, name: web, jsonpath: \"{.status.containerStatuses[0].restartCount}\"}\n        expect: {ge: 1}\n", "a bare number"},
		{"a boolean", "          kube: {resource: pods, name: web, jsonpath: \"{.status.containerStatuses[*].ready}\"}\n        expect: {equals: \"true true\"}\n", "a bare number or true/false"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			y := edit(t, validLab, first, tc.check)
			lab, ps := Load(labFS(y), "lab", bothLanguages)
			if len(ps) > 0 {
				t.Fatalf("a warning failed the load:\n%v", ps)
			}
			w := want{15, "steps[0].checks[0].observed", "the lab page would show " + tc.why + " as read"}
			if !w.in(lab.Warnings) || len(lab.Warnings) != 1 || !lab.Warnings[0].Warning {
				t.Errorf("missing the warning %v alone in:\n%v", w, lab.Warnings)
			}
			strict := bothLanguages
			strict.Strict = true
			if _, ps := Load(labFS(y), "lab", strict); !w.in(ps) || len(ps) != 1 || ps[0].Warning {
				t.Errorf("strict validation: want the problem %v alone, got:\n%v", w, ps)
			}
			read := strings.Replace(y, tc.check, tc.check+"        observed: [{en: \"it reads {value}\", zh: \"读到的是 {value}\"}]\n", 1)
			if lab, ps := Load(labFS(read), "lab", bothLanguages); len(ps) > 0 || len(lab.Warnings) > 0 {
				t.Errorf("with a reading: %v %v", ps, lab.Warnings)
			}
		})
	}
	for name, check := range map[string]string{
		"a phase":        first,
		"a name listed":  "          kube: {resource: pods, jsonpath: \"{.items[*].metadata.name}\"}\n        expect: {contains: web}\n",
		"a condition":    "          nodeCondition: {node: node01, type: Ready}\n        expect: {equals: \"True\"}\n",
		"a unit":         "          unit: {node: node01, unit: kubelet}\n        expect: {equals: active}\n",
		"an event":       "          events: {kind: Pod, name: web, field: reason}\n        expect: {contains: Started}\n",
		"a quoted state": "          kube: {resource: pods, name: web, jsonpath: \"{.status.phase}\"}\n        expect: {notEquals: \"Failed\"}\n",
	} {
		y := edit(t, validLab, first, check)
		if lab, ps := Load(labFS(y), "lab", bothLanguages); len(ps) > 0 || len(lab.Warnings) > 0 {
			t.Errorf("%s reads as it is, yet: %v %v", name, ps, lab.Warnings)
		}
	}
}

// In a combined check each condition shows its own value, so each needs
// its own reading; the warning is at the condition.
func TestRawValueInACondition(t *testing.T) {
	y := edit(t, validLab, `        probe:
          kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}
        expect: {equals: Running}
`, `        allOf:
          - probe:
              kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}
            expect: {equals: Running}
          - not:
              probe:
                command: {node: node01, run: "test -e /x", output: exitCode}
              expect: {equals: "0"}
`)
	lab, ps := Load(labFS(y), "lab", bothLanguages)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	w := want{21, "steps[0].checks[0].allOf[1].not.observed", "the lab page would show the command's exit code as read"}
	if !w.in(lab.Warnings) || len(lab.Warnings) != 1 {
		t.Errorf("missing %v alone in:\n%v", w, lab.Warnings)
	}
}

// The learner's own answer and history, and a script's verdict, are said by
// podpath itself.
func TestRawValueOfWhatPodpathSays(t *testing.T) {
	for name, c := range map[string]Condition{
		"answer":  {Probe: Probe{Answer: &AnswerProbe{}}, Expect: Matcher{SameAs: &Probe{Command: &CommandProbe{Node: "node01", Run: "echo 1"}}}},
		"history": {Probe: Probe{History: &HistoryProbe{Node: "node01", Matches: "crictl"}}, Expect: Matcher{NonEmpty: true}},
		"script":  {Probe: Probe{Script: &ScriptProbe{Node: "node01", Script: "exit 0"}}},
	} {
		if why := rawValue(&c); why != "" {
			t.Errorf("%s: %q", name, why)
		}
	}
}
