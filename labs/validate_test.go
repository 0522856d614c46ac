package labs

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
)

// edit applies replacements (old, new, old, new, ...) to a lab file; each
// old must be there, so a test cannot pass by editing nothing.
func edit(t *testing.T, lab string, pairs ...string) string {
	t.Helper()
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(lab, pairs[i]) {
			t.Fatalf("the lab has no %q to replace", pairs[i])
		}
		lab = strings.Replace(lab, pairs[i], pairs[i+1], 1)
	}
	return lab
}

func problems(t *testing.T, fs fstest.MapFS) Problems {
	t.Helper()
	lab, ps := Load(fs, "lab", bothLanguages)
	if lab != nil && len(ps) > 0 {
		t.Fatalf("Load returned a lab and problems")
	}
	return ps
}

// want is a problem a test expects: at line (0: any), in field, with a
// message containing message.
type want struct {
	line           int
	field, message string
}

func (w want) in(ps Problems) bool {
	for _, p := range ps {
		if strings.HasSuffix(p.File, "lab/lab.yaml") && (w.line == 0 || p.Line == w.line) && p.Field == w.field && strings.Contains(p.Message, w.message) {
			return true
		}
	}
	return false
}

func (w want) String() string { return fmt.Sprintf("lab.yaml:%d %s %q", w.line, w.field, w.message) }

// A lab with many kinds of mistakes gets all of them in one report, each
// with its line and field, and nothing that merely follows from another.
func TestEveryProblemAtOnce(t *testing.T) {
	y := edit(t, validLab,
		"level: beginner", "level: expert",
		"minutes: 5", "minutes: five",
		"  workers: 1\n", "  workers: 1\n  shared: maybe\n",
		"title: {en: First, zh: 第一步}", "title: First",
		"within: 30s", "withn: 30s",
		"      - run: kubectl get pods\n", "      - run: [kubectl, get]\n",
		"id: second", "id: second\n    id: again",
		"layers: [containerd]", "layers: containerd",
		"expect: {nonEmpty: true}", "expect: {ge: abc}\n        timeout: soon",
		`crictl: {node: node01, command: "ps -o json"`, `crictl: {node: node09, command: "ps -o json"`,
		"    solve:\n      - run: \"true\"", "    solve:\n      - rn: \"true\"",
	)
	ps := problems(t, labFS(y))
	wants := []want{
		{4, "level", `level "expert" must be one of beginner, intermediate, advanced`},
		{5, "minutes", "`minutes` wants a whole number, got \"five\""},
		{8, "cluster.shared", "`shared` wants true or false, got \"maybe\""},
		{13, "steps[0].title", "`title` wants a text in each language, like {en: First, zh: ...}, got \"First\""},
		{20, "steps[0].checks[0].withn", "unknown field \"withn\" in a check; did you mean `within`?"},
		{24, "steps[0].solve[0].run", "`run` wants a single value, got a list"},
		{27, "steps[1].id", "`id` is set twice (first at line 26); keep one"},
		{29, "steps[1].layers", "`layers` wants a list, like [containerd], got \"containerd\""},
		{33, "steps[1].checks[0].probe.crictl.node", `unknown node "node09"`},
		{34, "steps[1].checks[0].expect.ge", "`ge` wants a number, got \"abc\""},
		{35, "steps[1].checks[0].timeout", "`timeout` wants a duration like 30s or 2m, got \"soon\""},
		{39, "steps[1].solve[0].rn", "unknown action \"rn\" (did you mean `run`?)"},
	}
	for _, w := range wants {
		if !w.in(ps) {
			t.Errorf("missing %v", w)
		}
	}
	if len(ps) != len(wants) {
		t.Errorf("%d problems, want %d (one per mistake):\n%v", len(ps), len(wants), ps)
	}
	// In line order, and printed as file:line: message (at field).
	for i := 1; i < len(ps); i++ {
		if ps[i].Line < ps[i-1].Line {
			t.Errorf("problems out of line order:\n%v", ps)
			break
		}
	}
	if s := ps[1].String(); s != "lab/lab.yaml:5: `minutes` wants a whole number, got \"five\" (at minutes)" {
		t.Errorf("printed as %q", s)
	}
}

// The validator's own checks run even when YAML found mistakes.
func TestSchemaAndTypeProblemsTogether(t *testing.T) {
	y := edit(t, validLab, "minutes: 5", "minutes: five", "layers: [containerd]", "layers: [docker]")
	ps := problems(t, labFS(y))
	for _, w := range []want{{5, "minutes", "wants a whole number"}, {27, "steps[1].layers[0]", `unknown layer "docker"`}} {
		if !w.in(ps) {
			t.Errorf("missing %v in:\n%v", w, ps)
		}
	}
}

func TestDidYouMean(t *testing.T) {
	cases := []struct {
		name, old, new string
		w              want
	}{
		{"check field", "within: 30s", "withn: 30s", want{19, "steps[0].checks[0].withn", "unknown field \"withn\" in a check; did you mean `within`?"}},
		{"case", `jsonpath: "{.status.phase}"`, `jsonPath: "{.status.phase}"`, want{17, "steps[0].checks[0].probe.kube.jsonPath", "unknown field \"jsonPath\" in a kube probe; did you mean `jsonpath`?"}},
		{"missing letter", "        hints: [{en: Which", "        hint: [{en: Which", want{20, "steps[0].checks[0].hint", "did you mean `hints`?"}},
		{"swapped letters", "layers: [kubelet]", "layesr: [kubelet]", want{13, "steps[0].layesr", "did you mean `layers`?"}},
		{"probe", "kube: {resource: pods", "kueb: {resource: pods", want{17, "steps[0].checks[0].probe.kueb", "unknown probe \"kueb\" (did you mean `kube`?); a probe is one of kube,"}},
		{"matcher", "expect: {equals: Running}", "expect: {equal: Running}", want{18, "steps[0].checks[0].expect.equal", "unknown matcher \"equal\" (did you mean `equals`?)"}},
		{"top level", "summary: {en: A sample lab", "sumary: {en: A sample lab", want{3, "sumary", "unknown field \"sumary\" in the lab; did you mean `summary`?"}},
		{"nothing close", "    layers: [kubelet]\n", "    layers: [kubelet]\n    color: red\n", want{14, "steps[0].color", "unknown field \"color\" in a step; its fields are id, title, layers, noSkip, answer, checks, solve"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps := problems(t, labFS(edit(t, validLab, c.old, c.new)))
			if !c.w.in(ps) {
				t.Errorf("missing %v in:\n%v", c.w, ps)
			}
			if len(ps) != 1 {
				// hint: instead of hints: is one mistake, not also "a
				// check needs hints".
				t.Errorf("%d problems, want 1:\n%v", len(ps), ps)
			}
		})
	}
	if got := closest("color", []string{"id", "title", "layers"}); got != "" {
		t.Errorf("closest(color) = %q, want nothing", got)
	}
}

// goWords are Go's words that must not reach a lab author.
var goWords = regexp.MustCompile(`unmarshal|!!|labs\.|\b(u?int\d*|float\d*|bool|string|struct|map\[|\[\]\w+)\b`)

func TestTypeErrorsInPlainWords(t *testing.T) {
	cases := []struct {
		name, old, new string
		w              want
	}{
		{"string into number", "expect: {equals: Running}", "expect: {ge: abc}", want{18, "steps[0].checks[0].expect.ge", "`ge` wants a number, got \"abc\""}},
		{"quoted number", "expect: {equals: Running}", `expect: {lt: "3"}`, want{18, "steps[0].checks[0].expect.lt", "`lt` wants a number, got \"3\"; write it without quotes"}},
		{"string into int", "minutes: 5", "minutes: five", want{5, "minutes", "`minutes` wants a whole number, got \"five\""}},
		{"list into int", "minutes: 5", "minutes: [5]", want{5, "minutes", "`minutes` wants a whole number, got a list"}},
		{"string into bool", "  workers: 1\n", "  workers: 1\n  shared: maybe\n", want{8, "cluster.shared", "`shared` wants true or false, got \"maybe\""}},
		{"quoted bool", "expect: {nonEmpty: true}", `expect: {nonEmpty: "true"}`, want{32, "steps[1].checks[0].expect.nonEmpty", "`nonEmpty` wants true or false, got \"true\"; write it without quotes"}},
		{"bad duration", "within: 30s", "within: soon", want{19, "steps[0].checks[0].within", "`within` wants a duration like 30s or 2m, got \"soon\""}},
		{"duration without unit", "within: 30s", "within: 30", want{19, "steps[0].checks[0].within", "`within` wants a duration with a unit, like 30s or 2m, got 30"}},
		{"negative duration", "within: 30s", "within: -5s", want{19, "steps[0].checks[0].within", "`within` must not be negative, got -5s"}},
		{"list for a map", "cluster:\n  workers: 1\n", "cluster: [1]\n", want{6, "cluster", "`cluster` wants a map of its fields (workers, shared), got a list"}},
		{"map for a list", "layers: [kubelet]", "layers: {kubelet: true}", want{13, "steps[0].layers", "`layers` wants a list (lines starting with -, or [a, b]), got a map"}},
		{"map for a string", "expect: {equals: Running}", "expect: {equals: {phase: Running}}", want{18, "steps[0].checks[0].expect.equals", "`equals` wants a single value, got a map"}},
		{"list for a string", "      - run: kubectl get pods\n", "      - run: [kubectl, get]\n", want{23, "steps[0].solve[0].run", "`run` wants a single value, got a list"}},
		{"string for a text", "title: {en: First, zh: 第一步}", "title: First", want{12, "steps[0].title", "`title` wants a text in each language, like {en: First, zh: ...}, got \"First\""}},
		{"list in a text", "title: {en: First, zh: 第一步}", "title: {en: [First], zh: 第一步}", want{12, "steps[0].title.en", "`title.en` wants a single value, got a list"}},
		{"string for a probe", `          kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}`, "          kube: pods", want{17, "steps[0].checks[0].probe.kube", "`kube` wants a map of its fields (resource, namespace, name, selector, fieldSelector, jsonpath), got \"pods\""}},
		{"string for an answer probe", `          kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}`, "          answer: yes", want{17, "steps[0].checks[0].probe.answer", "`answer` wants {} (an answer probe has no fields), got \"yes\""}},
		{"map for a list of actions", "setup:\n  - apply: manifests/pod.yaml", "setup:\n  apply: manifests/pod.yaml", want{8, "setup", "`setup` wants a list (lines starting with -, or [a, b]), got a map"}},
		{"key set twice", "level: beginner", "level: beginner\nlevel: advanced", want{5, "level", "`level` is set twice (first at line 4); keep one"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps := problems(t, labFS(edit(t, validLab, c.old, c.new)))
			if !c.w.in(ps) {
				t.Errorf("missing %v in:\n%v", c.w, ps)
			}
			for _, p := range ps {
				if m := goWords.FindString(p.Message); m != "" {
					t.Errorf("Go's word %q in %q", m, p.Message)
				}
			}
		})
	}
}

// `answer:` alone is YAML's null, not an empty answer probe.
func TestEmptyValueSaysWhatToWrite(t *testing.T) {
	y := edit(t, validLab, `          kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}`, "          answer:")
	w := want{17, "steps[0].checks[0].probe.answer", "`answer:` has no value; an answer probe is written answer: {}"}
	if ps := problems(t, labFS(y)); !w.in(ps) {
		t.Errorf("missing %v in:\n%v", w, ps)
	}
}

// answerLab's second step asks for an answer and compares it with the
// cluster: it is valid, and the lint tests break it one way at a time.
var answerLab = strings.Replace(validLab, `    checks:
      - name: {en: crictl lists it, zh: crictl 列出了它}
        probe:
          crictl: {node: node01, command: "ps -o json", jsonpath: "{.containers[*].id}"}
        expect: {nonEmpty: true}`, `    answer: {en: The container's ID, zh: 容器的 ID}
    checks:
      - name: {en: Your answer is the ID, zh: 你的答案是这个 ID}
        probe:
          answer: {}
        expect:
          sameAs:
            crictl: {node: node01, command: "ps -o json", jsonpath: "{.containers[*].id}"}`, 1)

// lintCase is a lab edited one way and the problem the edit must bring
// (nil: the edited lab must be valid).
type lintCase struct {
	name string
	lab  string
	edit []string
	w    *want
}

func runLintCases(t *testing.T, cases []lintCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps := problems(t, labFS(edit(t, c.lab, c.edit...)))
			if c.w == nil {
				if len(ps) > 0 {
					t.Errorf("a good lab has problems:\n%v", ps)
				}
				return
			}
			if !c.w.in(ps) {
				t.Errorf("missing %v in:\n%v", *c.w, ps)
			}
			if len(ps) != 1 {
				t.Errorf("%d problems, want 1:\n%v", len(ps), ps)
			}
		})
	}
}

// Checks that cannot fail, or can never pass.
func TestCannotFailLints(t *testing.T) {
	if ps := problems(t, labFS(answerLab)); len(ps) > 0 {
		t.Fatalf("the answer lab has problems:\n%v", ps)
	}
	runLintCases(t, []lintCase{
		// An answer compared with a value written in the lab.
		{"answer equals a literal", answerLab, []string{"        expect:\n          sameAs:\n            crictl: {node: node01, command: \"ps -o json\", jsonpath: \"{.containers[*].id}\"}", "        expect: {equals: abc123}"},
			&want{33, "steps[1].checks[0].expect.equals", "the answer is compared with a value written in the lab (equals)"}},
		{"answer matches a literal", answerLab, []string{"        expect:\n          sameAs:\n            crictl: {node: node01, command: \"ps -o json\", jsonpath: \"{.containers[*].id}\"}", "        expect: {matches: \"^[a-f0-9]+$\"}"},
			&want{33, "steps[1].checks[0].expect.matches", "the answer is compared with a value written in the lab (matches)"}},
		{"answer nonEmpty", answerLab, []string{"        expect:\n          sameAs:\n            crictl: {node: node01, command: \"ps -o json\", jsonpath: \"{.containers[*].id}\"}", "        expect: {nonEmpty: true}"},
			&want{33, "steps[1].checks[0].expect.nonEmpty", "nonEmpty only asks whether an answer was typed"}},
		{"answer sameAs a probe", answerLab, nil, nil},
		{"a literal for a probe of the cluster", validLab, nil, nil}, // equals: Running on a kube probe

		// A pattern that matches anything.
		{"matches .*", validLab, []string{"expect: {equals: Running}", `expect: {matches: ".*"}`},
			&want{18, "steps[0].checks[0].expect.matches", `matches ".*" accepts every value, even an empty one, so the check cannot fail`}},
		{"matches ^.*$", validLab, []string{"expect: {equals: Running}", `expect: {matches: "^.*$"}`}, &want{18, "steps[0].checks[0].expect.matches", "accepts every value"}},
		{"matches (?s).*", validLab, []string{"expect: {equals: Running}", `expect: {matches: "(?s).*"}`}, &want{18, "steps[0].checks[0].expect.matches", "accepts every value"}},
		{"matches x*", validLab, []string{"expect: {equals: Running}", `expect: {matches: "x*"}`}, &want{18, "steps[0].checks[0].expect.matches", "accepts every value"}},
		{"matches inside count", validLab, []string{"expect: {equals: Running}", `expect: {count: {matches: ".*"}}`}, &want{18, "steps[0].checks[0].expect.count.matches", "accepts every value"}},
		{"matches in a wait", validLab, []string{"  - apply: manifests/pod.yaml\n", "  - apply: manifests/pod.yaml\n  - wait: {probe: {kube: {resource: pods, name: web, jsonpath: \"{.status.phase}\"}}, expect: {matches: \".*\"}, timeout: 60s}\n"},
			&want{10, "setup[1].wait.expect.matches", "accepts every value"}},
		{"matches a pattern", validLab, []string{"expect: {equals: Running}", `expect: {matches: "^Run"}`}, nil},
		{"matches only empty", validLab, []string{"expect: {equals: Running}", `expect: {matches: "^$"}`}, nil},
		{"matches .+", validLab, []string{"expect: {equals: Running}", `expect: {matches: ".+"}`}, nil},

		// A probe compared with itself.
		{"sameAs itself", validLab, []string{"expect: {equals: Running}", `expect: {sameAs: {kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}}}`},
			&want{18, "steps[0].checks[0].expect.sameAs", "sameAs compares the probe with itself, so the check cannot fail"}},
		{"differsFrom itself", validLab, []string{"expect: {equals: Running}", `expect: {differsFrom: {kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}}}`},
			&want{18, "steps[0].checks[0].expect.differsFrom", "differsFrom compares the probe with itself, so the check can never pass"}},
		{"answer sameAs answer", answerLab, []string{"          sameAs:\n            crictl: {node: node01, command: \"ps -o json\", jsonpath: \"{.containers[*].id}\"}", "          sameAs: {answer: {}}"},
			&want{34, "steps[1].checks[0].expect.sameAs", "sameAs compares the probe with itself"}},
		{"sameAs itself in a wait", validLab, []string{"  - apply: manifests/pod.yaml\n", "  - apply: manifests/pod.yaml\n  - wait: {probe: {unit: {node: node01, unit: kubelet}}, expect: {sameAs: {unit: {node: node01, unit: kubelet}}}, timeout: 60s}\n"},
			&want{10, "setup[1].wait.expect.sameAs", "sameAs compares the probe with itself"}},
		{"sameAs another probe", validLab, []string{"expect: {equals: Running}", `expect: {sameAs: {kube: {resource: pods, name: web2, jsonpath: "{.status.phase}"}}}`}, nil},

		// The answer box's label.
		{"answer without a label", answerLab, []string{"    answer: {en: The container's ID, zh: 容器的 ID}\n", ""},
			&want{25, "steps[1].answer", "step second reads the learner's answer but has no answer: label"}},
		{"label without an answer", validLab, []string{"    layers: [kubelet]\n", "    layers: [kubelet]\n    answer: {en: \"Which phase?\", zh: 哪个阶段？}\n"},
			&want{14, "steps[0].answer", "step first has an answer: label but no check reads the answer"}},
		{"label in one language", answerLab, []string{"    answer: {en: The container's ID, zh: 容器的 ID}", "    answer: {en: The container's ID}"},
			&want{28, "steps[1].answer", "step second answer label needs a Chinese text"}},

		// A count no value can miss.
		{"count ge 0", validLab, []string{"expect: {equals: Running}", "expect: {count: {ge: 0}}"}, &want{18, "steps[0].checks[0].expect.count.ge", "count ge 0 always holds"}},
		{"count lt 0", validLab, []string{"expect: {equals: Running}", "expect: {count: {lt: 0}}"}, &want{18, "steps[0].checks[0].expect.count.lt", "count lt 0 never holds"}},
		{"count ge 1", validLab, []string{"expect: {equals: Running}", "expect: {count: {ge: 1}}"}, nil},
	})
}

// Probes of resources and kinds the cluster does not have.
func TestResourceLints(t *testing.T) {
	runLintCases(t, []lintCase{
		{"unknown resource", validLab, []string{"resource: pods", "resource: pdos"},
			&want{17, "steps[0].checks[0].probe.kube.resource", "unknown resource \"pdos\": Kubernetes 1.34 has no such built-in resource (did you mean `pods`?)"}},
		{"unknown resource, nothing close", validLab, []string{"resource: pods", "resource: widgets"},
			&want{17, "steps[0].checks[0].probe.kube.resource", "unknown resource \"widgets\": Kubernetes 1.34 has no such built-in resource; write it as kubectl takes it"}},
		{"resource in the wrong group", validLab, []string{"resource: pods", "resource: deployments.batch"},
			&want{17, "steps[0].checks[0].probe.kube.resource", `resource "deployments.batch": deployments is in the group apps`}},
		{"resource with its version", validLab, []string{"resource: pods", "resource: deployments.v1.apps"},
			&want{17, "steps[0].checks[0].probe.kube.resource", `resource "deployments.v1.apps": write it without the API version, as deployments.apps`}},
		{"core resource with its version", validLab, []string{"resource: pods", "resource: pods.v1"},
			&want{17, "steps[0].checks[0].probe.kube.resource", `resource "pods.v1": write it without the API version, as pods`}},
		{"short name in capitals", validLab, []string{"resource: pods", "resource: PO"}, &want{17, "steps[0].checks[0].probe.kube.resource", `unknown resource "PO"`}},
		{"resource in sameAs", validLab, []string{"expect: {equals: Running}", `expect: {sameAs: {kube: {resource: nods, name: web, jsonpath: "{.x}"}}}`},
			&want{18, "steps[0].checks[0].expect.sameAs.kube.resource", "did you mean `nodes`?"}},
		{"plural", validLab, []string{"resource: pods", "resource: endpointslices"}, nil},
		{"singular", validLab, []string{"resource: pods", "resource: lease"}, nil},
		{"kind", validLab, []string{"resource: pods", "resource: DaemonSet"}, nil},
		{"kind in capitals", validLab, []string{"resource: pods", "resource: STATEFULSETS"}, nil},
		{"short name", validLab, []string{"resource: pods", "resource: deploy"}, nil},
		{"with its group", validLab, []string{"resource: pods", "resource: deployments.apps"}, nil},
		{"events in either group", validLab, []string{"resource: pods", "resource: events.events.k8s.io"}, nil},
		{"custom resource with a group", validLab, []string{"resource: pods", "resource: widgets.example.com"}, nil},

		// The kind of an events probe.
		{"events kind in lowercase", validLab, []string{`kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}`, `events: {kind: pod, name: web}`},
			&want{17, "steps[0].checks[0].probe.events.kind", `events kind "pod": write the kind as Kubernetes does, Pod`}},
		{"events kind misspelt", validLab, []string{`kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}`, `events: {kind: Nodee, name: web}`},
			&want{17, "steps[0].checks[0].probe.events.kind", "unknown kind \"Nodee\" (did you mean `Node`?)"}},
		{"events kind", validLab, []string{`kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}`, `events: {kind: ReplicaSet, name: web}`}, nil},
		{"events of a custom kind", validLab, []string{`kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}`, `events: {kind: Widget, name: web}`}, nil},
	})
}

// A resource a CustomResourceDefinition of the lab defines is known.
func TestCustomResourceFromTheLab(t *testing.T) {
	y := edit(t, validLab, "resource: pods", "resource: wg", "  - apply: manifests/pod.yaml\n", "  - apply: manifests/pod.yaml\n  - apply: manifests/crd.yaml\n")
	fs := labFS(y)
	if ps := problems(t, fs); !(want{18, "steps[0].checks[0].probe.kube.resource", `unknown resource "wg"`}).in(ps) {
		t.Errorf("without its definition, wg is unknown:\n%v", ps)
	}
	fs["lab/manifests/crd.yaml"] = &fstest.MapFile{Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata: {name: first}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wg]}
  scope: Namespaced
`)}
	if ps := problems(t, fs); len(ps) > 0 {
		t.Errorf("a resource the lab defines is not accepted:\n%v", ps)
	}
	fs["lab/lab.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(y, "resource: wg", "resource: gadgets.example.com", 1))}
	if ps := problems(t, fs); !(want{18, "steps[0].checks[0].probe.kube.resource", `unknown resource "gadgets.example.com"`}).in(ps) {
		t.Errorf("a resource of a group the lab defines, but not one it defines, is accepted:\n%v", ps)
	}
}

func TestResourceTable(t *testing.T) {
	for _, name := range []string{"pods", "pod", "po", "Pod", "deployments", "deploy", "Deployment.apps", "services", "svc", "nodes", "no", "events", "ev",
		"endpoints", "ep", "endpointslices", "replicasets", "rs", "daemonsets", "ds", "statefulsets", "sts", "jobs", "cronjobs", "cj", "configmaps", "cm",
		"secrets", "namespaces", "ns", "leases", "lease.coordination.k8s.io", "networkpolicies", "netpol", "ingresses", "storageclasses", "sc", "crd",
		"pvc", "pv", "serviceaccounts", "sa", "roles", "clusterrolebindings", "priorityclasses", "runtimeclasses", "resourceclaims", "csinodes"} {
		if _, ok := findResource(builtinResources, name); !ok {
			t.Errorf("%s is not known", name)
		}
	}
	for _, name := range []string{"pdos", "deployment.core", "pods.apps", "DEPLOY", "bindings", "tokenreviews", "metrics"} {
		if _, ok := findResource(builtinResources, name); ok {
			t.Errorf("%s is known", name)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"within", "within", 0}, {"withn", "within", 1}, {"wihtin", "within", 1}, {"hint", "hints", 1}, {"kube", "cube", 1}, {"", "abc", 3}, {"color", "title", 5}} {
		if d := editDistance(c.a, c.b); d != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, d, c.d)
		}
	}
}
