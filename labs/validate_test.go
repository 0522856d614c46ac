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
		{"list for a map", "cluster:\n  workers: 1\n", "cluster: [1]\n", want{6, "cluster", "`cluster` wants a map of its fields (workers, worker, shared), got a list"}},
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

// combinedLab's first check is allOf a probe and a not, instead of a probe
// and expect; the combinator tests break it one way at a time.
var combinedLab = strings.Replace(validLab, `        probe:
          kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}
        expect: {equals: Running}
`, `        allOf:
          - probe:
              kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}
            expect: {equals: Running}
          - not:
              probe:
                command: {node: node01, run: "crictl ps -q --name web"}
              expect: {empty: true}
              observed: [{equals: "", en: no web container runs, zh: 没有 web 容器在运行}, {en: a web container runs, zh: 有 web 容器在运行}]
`, 1)

func TestCombinedChecks(t *testing.T) {
	lab, ps := Load(labFS(combinedLab), "lab", bothLanguages)
	if len(ps) > 0 {
		t.Fatalf("the combined lab has problems:\n%v", ps)
	}
	c := &lab.Steps[0].Checks[0]
	if len(c.AllOf) != 2 || c.AllOf[1].Not == nil || c.AllOf[1].Not.Probe.Command == nil || c.Within.D().Seconds() != 30 {
		t.Fatalf("parsed check: %+v", c)
	}
	if got := c.Conditions(); len(got) != 2 || got[0].Probe.Kube == nil || got[1].Probe.Command == nil || got[1].Expect.Kind() != "empty" {
		t.Errorf("conditions of the check: %+v", got)
	}
	const probe = "probe:\n                command: {node: node01, run: \"crictl ps -q --name web\"}\n              expect: {empty: true}\n              observed: [{equals: \"\", en: no web container runs, zh: 没有 web 容器在运行}, {en: a web container runs, zh: 有 web 容器在运行}]"
	runLintCases(t, []lintCase{
		{"anyOf", combinedLab, []string{"        allOf:", "        anyOf:"}, nil},
		{"not at the top", combinedLab, []string{"        allOf:\n          - probe:\n              kube: {resource: pods, name: web, jsonpath: \"{.status.phase}\"}\n            expect: {equals: Running}\n          - not:\n", "        not:\n          probe:\n            kube: {resource: pods, name: web, jsonpath: \"{.status.phase}\"}\n          expect: {equals: Running}\n        x-not:\n"},
			&want{20, "steps[0].checks[0].x-not", `unknown field "x-not" in a check`}},
		{"nested anyOf in allOf", combinedLab, []string{"          - not:\n              " + probe, "          - anyOf:\n              - probe: {unit: {node: node01, unit: kubelet}}\n                expect: {equals: active}\n              - not: {probe: {unit: {node: node01, unit: kubelet}}, expect: {equals: failed}}"}, nil},
		{"a problem deep down", combinedLab, []string{"          - not:\n              " + probe, "          - anyOf:\n              - probe: {unit: {node: node01, unit: kubelet}}\n                expect: {equals: active}\n              - not: {probe: {unit: {node: node07, unit: kubelet}}, expect: {equals: failed}}"},
			&want{23, "steps[0].checks[0].allOf[1].anyOf[1].not.probe.unit.node", `unknown node "node07"`}},

		{"probe and allOf", combinedLab, []string{"        allOf:\n", "        probe: {unit: {node: node01, unit: kubelet}}\n        allOf:\n"},
			&want{15, "steps[0].checks[0]", "a check sets probe and allOf; set exactly one of probe (with expect), allOf, anyOf, not"}},
		{"allOf and anyOf", combinedLab, []string{"        allOf:\n", "        anyOf: [{probe: {unit: {node: node01, unit: kubelet}}, expect: {equals: active}}]\n        allOf:\n"},
			&want{15, "steps[0].checks[0]", "a check sets allOf and anyOf"}},
		{"no probe and no combinator", validLab, []string{"        probe:\n          kube: {resource: pods, name: web, jsonpath: \"{.status.phase}\"}\n        expect: {equals: Running}\n", ""},
			&want{15, "steps[0].checks[0]", "a check needs probe: (with expect:) or one of allOf, anyOf, not"}},
		{"empty anyOf", validLab, []string{"        probe:\n          kube: {resource: pods, name: web, jsonpath: \"{.status.phase}\"}\n        expect: {equals: Running}\n", "        anyOf: []\n"},
			&want{16, "steps[0].checks[0].anyOf", "anyOf needs a list of conditions"}},
		{"allOf with no value", validLab, []string{"        probe:\n          kube: {resource: pods, name: web, jsonpath: \"{.status.phase}\"}\n        expect: {equals: Running}\n", "        allOf:\n"},
			&want{16, "steps[0].checks[0].allOf", "allOf needs a list of conditions"}},
		{"not with no value", combinedLab, []string{"          - not:\n              " + probe, "          - not:"},
			&want{20, "steps[0].checks[0].allOf[1].not", "`not:` has no value; give it a condition"}},
		{"expect beside allOf", combinedLab, []string{"        allOf:\n", "        expect: {equals: Running}\n        allOf:\n"},
			&want{16, "steps[0].checks[0].expect", "expect: belongs with a probe:; each condition of allOf has its own"}},
		{"a condition with expect and no probe", combinedLab, []string{"          - probe:\n              kube: {resource: pods, name: web, jsonpath: \"{.status.phase}\"}\n            expect", "          - expect"},
			&want{17, "steps[0].checks[0].allOf[0].probe", "a condition has expect: but no probe:"}},
		{"an empty item", combinedLab, []string{"          - not:\n              " + probe, "          -"},
			&want{20, "steps[0].checks[0].allOf[1]", "a condition needs probe: (with expect:) or one of allOf, anyOf, not"}},
		{"a condition with no matcher", combinedLab, []string{"\n              expect: {empty: true}", ""},
			&want{21, "steps[0].checks[0].allOf[1].not.expect", "a check needs expect:"}},

		// What validate.go and yamlcheck.go report for a check's probe and
		// expect, at a condition's own field.
		{"unknown field in a condition", combinedLab, []string{"            expect: {equals: Running}", "            expct: {equals: Running}"},
			&want{19, "steps[0].checks[0].allOf[0].expct", "unknown field \"expct\" in a condition (did you mean `expect`?)"}},
		{"a check's field in a condition", combinedLab, []string{"            expect: {equals: Running}", "            expect: {equals: Running}\n            within: 30s"},
			&want{20, "steps[0].checks[0].allOf[0].within", "`within` belongs to the check, not to a condition of allOf, anyOf or not"}},
		{"did you mean allOf", combinedLab, []string{"        allOf:\n", "        allof:\n"},
			&want{16, "steps[0].checks[0].allof", "unknown field \"allof\" in a check; did you mean `allOf`?"}},
		{"wrong type in a nested matcher", combinedLab, []string{"expect: {empty: true}", "expect: {ge: many}"},
			&want{23, "steps[0].checks[0].allOf[1].not.expect.ge", "`ge` wants a number, got \"many\""}},
		{"a list for not", combinedLab, []string{"          - not:\n              " + probe, "          - not: [a]"},
			&want{20, "steps[0].checks[0].allOf[1].not", "`not` wants a condition: a probe: with its expect:, or one of allOf, anyOf, not, got a list"}},
		{"unknown node in a nested probe", combinedLab, []string{"command: {node: node01", "command: {node: node03"},
			&want{22, "steps[0].checks[0].allOf[1].not.probe.command.node", `unknown node "node03"`}},
		{"two probes in a condition", combinedLab, []string{"              kube: {resource: pods, name: web, jsonpath: \"{.status.phase}\"}\n", "              kube: {resource: pods, name: web, jsonpath: \"{.status.phase}\"}\n              unit: {node: node01, unit: kubelet}\n"},
			&want{18, "steps[0].checks[0].allOf[0].probe", "a probe sets kube and unit; set exactly one"}},
		{"script with expect in a condition", combinedLab, []string{`command: {node: node01, run: "crictl ps -q --name web"}`, `script: {node: node01, script: "exit 0"}`},
			&want{23, "steps[0].checks[0].allOf[1].not.expect", "a script check passes when its script exits 0; remove expect"}},
		{"script in a condition", combinedLab, []string{`command: {node: node01, run: "crictl ps -q --name web"}`, `script: {node: node01, script: "exit 0"}`, "\n              expect: {empty: true}", ""}, nil},
	})
}

// The lints of a check's matcher and probe hold in every condition, and
// say what a not turns them into.
func TestLintsInsideCombinators(t *testing.T) {
	combinedAnswer := strings.Replace(answerLab, `        probe:
          answer: {}
        expect:
          sameAs:
            crictl: {node: node01, command: "ps -o json", jsonpath: "{.containers[*].id}"}`, `        anyOf:
          - probe: {kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}}
            expect: {equals: Failed}
          - probe: {answer: {}}
            expect:
              sameAs: {crictl: {node: node01, command: "ps -o json", jsonpath: "{.containers[*].id}"}}`, 1)
	lab, ps := Load(labFS(combinedAnswer), "lab", bothLanguages)
	if len(ps) > 0 {
		t.Fatalf("the combined answer lab has problems:\n%v", ps)
	}
	if !lab.Steps[1].NeedsAnswer() {
		t.Error("a step whose anyOf reads the answer does not need one")
	}
	if lab.Steps[0].NeedsAnswer() {
		t.Error("a step that reads no answer needs one")
	}
	runLintCases(t, []lintCase{
		{"matches .* in allOf", combinedLab, []string{"expect: {equals: Running}", `expect: {matches: ".*"}`},
			&want{19, "steps[0].checks[0].allOf[0].expect.matches", `matches ".*" accepts every value, even an empty one, so this part of the check cannot fail`}},
		{"matches .* under not", combinedLab, []string{"expect: {empty: true}", `expect: {matches: "(?s).*"}`},
			&want{23, "steps[0].checks[0].allOf[1].not.expect.matches", "so this part of the check can never pass"}},
		{"matches .* under a top-level not", validLab, []string{"        probe:\n          kube: {resource: pods, name: web, jsonpath: \"{.status.phase}\"}\n        expect: {equals: Running}\n", "        not:\n          probe: {kube: {resource: pods, name: web, jsonpath: \"{.status.phase}\"}}\n          expect: {matches: \"^.*$\"}\n"},
			&want{18, "steps[0].checks[0].not.expect.matches", "so the check can never pass"}},
		{"count ge 0 under not", combinedLab, []string{"expect: {empty: true}", "expect: {count: {ge: 0}}"},
			&want{23, "steps[0].checks[0].allOf[1].not.expect.count.ge", "count ge 0 always holds (a count is never negative), so this part of the check can never pass"}},
		{"sameAs itself in anyOf", combinedLab, []string{"        allOf:", "        anyOf:", "expect: {equals: Running}", `expect: {sameAs: {kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}}}`},
			&want{19, "steps[0].checks[0].anyOf[0].expect.sameAs", "sameAs compares the probe with itself, so this part of the check cannot fail"}},
		{"differsFrom itself under not", combinedLab, []string{"expect: {empty: true}", `expect: {differsFrom: {command: {node: node01, run: "crictl ps -q --name web"}}}`},
			&want{23, "steps[0].checks[0].allOf[1].not.expect.differsFrom", "differsFrom compares the probe with itself, so this part of the check cannot fail"}},
		{"unknown resource in a condition", combinedLab, []string{"kube: {resource: pods", "kube: {resource: pdos"},
			&want{18, "steps[0].checks[0].allOf[0].probe.kube.resource", "unknown resource \"pdos\": Kubernetes 1.34 has no such built-in resource (did you mean `pods`?)"}},
		{"events kind in a condition", combinedLab, []string{`kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}`, `events: {kind: pod, name: web}`, "expect: {equals: Running}", "expect: {equals: Started}"},
			&want{18, "steps[0].checks[0].allOf[0].probe.events.kind", `events kind "pod": write the kind as Kubernetes does, Pod`}},

		{"answer in anyOf compared with the cluster", combinedAnswer, nil, nil},
		{"answer in anyOf compared with a literal", combinedAnswer, []string{"            expect:\n              sameAs: {crictl: {node: node01, command: \"ps -o json\", jsonpath: \"{.containers[*].id}\"}}", "            expect: {equals: abc}"},
			&want{35, "steps[1].checks[0].anyOf[1].expect.equals", "the answer is compared with a value written in the lab (equals)"}},
		{"answer under not compared with a quantity", combinedAnswer, []string{"          - probe: {answer: {}}\n            expect:\n              sameAs: {crictl: {node: node01, command: \"ps -o json\", jsonpath: \"{.containers[*].id}\"}}", "          - not: {probe: {answer: {}}, expect: {quantity: 1Gi}}"},
			&want{34, "steps[1].checks[0].anyOf[1].not.expect.quantity", "the answer is compared with a value written in the lab (quantity)"}},
		{"answer in anyOf without a label", combinedAnswer, []string{"    answer: {en: The container's ID, zh: 容器的 ID}\n", ""},
			&want{25, "steps[1].answer", "step second reads the learner's answer but has no answer: label"}},
		{"answer in sameAs of a condition", validLab, []string{"expect: {equals: Running}", "expect: {differsFrom: {answer: {}}}"},
			&want{11, "steps[0].answer", "step first reads the learner's answer but has no answer: label"}},
	})
}

func TestQuantityMatcherLint(t *testing.T) {
	runLintCases(t, []lintCase{
		{"quantity", validLab, []string{"expect: {equals: Running}", "expect: {quantity: 128Mi}"}, nil},
		{"quantity in millis", validLab, []string{"expect: {equals: Running}", `expect: {quantity: "250m"}`}, nil},
		{"not a quantity", validLab, []string{"expect: {equals: Running}", `expect: {quantity: "128 MiB"}`},
			&want{18, "steps[0].checks[0].expect.quantity", `quantity "128 MiB" is not a Kubernetes quantity`}},
		{"quantity and equals", validLab, []string{"expect: {equals: Running}", `expect: {equals: Running, quantity: 1Gi}`},
			&want{18, "steps[0].checks[0].expect", "expect sets equals and quantity; set exactly one"}},
		// A quantity of the session's values is judged as a session fills it.
		{"quantity of a value", validLab, []string{"  workers: 1\n", "  workers: 1\nvalues:\n  - {name: mem, oneOf: [\"48\", \"56\"]}\n", "expect: {equals: Running}", `expect: {quantity: "{{ .Values.mem }}Mi"}`}, nil},
		{"quantity of a value, not a quantity", validLab, []string{"  workers: 1\n", "  workers: 1\nvalues:\n  - {name: mem, oneOf: [\"48\", \"56\"]}\n", "expect: {equals: Running}", `expect: {quantity: "{{ .Values.mem }} MiB"}`},
			&want{0, "steps[0].checks[0].expect.quantity", `is not a Kubernetes quantity`}},
	})
}

func TestEventsPickLints(t *testing.T) {
	events := func(fields string) []string {
		return []string{`kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}`, "events: {kind: Pod, name: web" + fields + "}", "expect: {equals: Running}", "expect: {equals: Started}"}
	}
	runLintCases(t, []lintCase{
		{"pick latest", validLab, events(", pick: latest"), nil},
		{"uidOf", validLab, events(", uidOf: {resource: pods}"), nil},
		{"uidOf with its own name", validLab, events(", uidOf: {resource: po, namespace: default, name: web}"), nil},
		{"uidOf of a prefix named", validLab, []string{`kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}`, "events: {kind: Pod, name: web-*, uidOf: {resource: pods, name: web-1}}"}, nil},
		{"pick another", validLab, events(", pick: first"),
			&want{17, "steps[0].checks[0].probe.events.pick", `pick "first": the one pick is latest`}},
		{"uid and uidOf", validLab, events(", uid: abc, uidOf: {resource: pods}"),
			&want{17, "steps[0].checks[0].probe.events.uid", "by uid or by uidOf, not both"}},
		{"uidOf without resource", validLab, events(", uidOf: {name: web}"),
			&want{17, "steps[0].checks[0].probe.events.uidOf.resource", "uidOf needs resource:"}},
		{"uidOf of an unknown resource", validLab, events(", uidOf: {resource: podz}"),
			&want{17, "steps[0].checks[0].probe.events.uidOf.resource", "unknown resource \"podz\""}},
		{"uidOf of another kind", validLab, events(", uidOf: {resource: deployments.apps}"),
			&want{17, "steps[0].checks[0].probe.events.uidOf.resource", "uidOf reads deployments.apps, but the events are of kind Pod: no event of a Pod has the UID of a Deployment"}},
		{"uidOf of a prefix", validLab, []string{`kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}`, "events: {kind: Pod, name: web-*, uidOf: {resource: pods}}"},
			&want{17, "steps[0].checks[0].probe.events.uidOf.name", `uidOf reads one object: give it name: (the events probe's name "web-*" is a prefix)`}},
		{"uidOf misspelt", validLab, events(", uidof: {resource: pods}"),
			&want{17, "steps[0].checks[0].probe.events.uidof", "did you mean `uidOf`?"}},
	})
	// A UID written in the lab is a warning: the lab loads, and fails only
	// when validation is strict.
	y := edit(t, validLab, events(", uid: 0b1c")...)
	lab, ps := Load(labFS(y), "lab", bothLanguages)
	w := want{17, "steps[0].checks[0].probe.events.uid", `uid "0b1c" is the UID of an object of one cluster`}
	if lab == nil || !w.in(lab.Warnings) || len(ps) > 0 {
		t.Errorf("a written uid: lab %v, warnings %v, problems %v", lab != nil, lab.Warnings, ps)
	}
}

// A step checked by shell history alone is a warning, an error when strict.
func TestHistoryOnlyStep(t *testing.T) {
	history := func(node, re string) string { return "history: {node: " + node + ", matches: \"" + re + "\"}" }
	onlyHistory := edit(t, validLab, `crictl: {node: node01, command: "ps -o json", jsonpath: "{.containers[*].id}"}`, history("node01", "crictl +ps"))
	w := want{29, "steps[1].checks", "every check of step second reads only the shell history"}
	lab, ps := Load(labFS(onlyHistory), "lab", bothLanguages)
	if len(ps) > 0 || lab == nil {
		t.Fatalf("a warning stopped the lab from loading:\n%v", ps)
	}
	if len(lab.Warnings) != 1 || !w.in(lab.Warnings) || !lab.Warnings[0].Warning {
		t.Errorf("warnings %v, want %v", lab.Warnings, w)
	}
	if s := lab.Warnings[0].String(); !strings.Contains(s, "lab.yaml:29: warning: every check") {
		t.Errorf("printed as %q", s)
	}
	strict := bothLanguages
	strict.Strict = true
	lab, ps = Load(labFS(onlyHistory), "lab", strict)
	if lab != nil || len(ps) != 1 || !w.in(ps) || ps[0].Warning {
		t.Errorf("strict: lab %v, problems %v", lab != nil, ps)
	}
	// A lab that fails anyway shows its warnings with its problems.
	_, ps = Load(labFS(edit(t, onlyHistory, "level: beginner", "level: expert")), "lab", bothLanguages)
	if len(ps) != 2 || !w.in(ps) {
		t.Errorf("a failing lab's problems %v, want its warning too", ps)
	}

	cases := []struct {
		name string
		lab  string
		warn bool
	}{
		{"history and state", edit(t, onlyHistory, "    solve:\n      - run: \"true\"", "      - name: {en: state, zh: 状态}\n        probe: {unit: {node: node01, unit: kubelet}}\n        expect: {equals: active}\n        hints: [{en: h, zh: 提示}, {en: h2, zh: 提示二}]\n    solve:\n      - run: \"true\""), false},
		{"two history checks", edit(t, onlyHistory, "    solve:\n      - run: \"true\"", "      - name: {en: more, zh: 更多}\n        probe: {"+history("controlplane", "kubectl")+"}\n        expect: {nonEmpty: true}\n        hints: [{en: h, zh: 提示}, {en: h2, zh: 提示二}]\n    solve:\n      - run: \"true\""), true},
		{"allOf of history", edit(t, combinedLab, `kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}`, history("node01", "crictl"), `command: {node: node01, run: "crictl ps -q --name web"}`, history("node01", "rm")), true},
		{"anyOf of history and state", edit(t, combinedLab, "        allOf:", "        anyOf:", `kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}`, history("node01", "crictl")), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lab, ps := Load(labFS(c.lab), "lab", bothLanguages)
			if len(ps) > 0 {
				t.Fatalf("problems:\n%v", ps)
			}
			if got := len(lab.Warnings) > 0; got != c.warn {
				t.Errorf("warned %v, want %v: %v", got, c.warn, lab.Warnings)
			}
		})
	}
}

// The built-in labs load strictly (a warning is an error for them), and no
// step of theirs is checked by shell history alone.
func TestBuiltinHistoryOnlySteps(t *testing.T) {
	all, ps := Builtin()
	if len(ps) > 0 {
		t.Fatalf("the built-in labs have problems:\n%v", ps)
	}
	for _, l := range all {
		for i := range l.Steps {
			v := &validator{lab: l}
			v.historyOnly([]any{"steps", i}, &l.Steps[i])
			if len(v.warnings) > 0 {
				t.Errorf("lab %s step %s: %v", l.ID, l.Steps[i].ID, v.warnings)
			}
		}
	}
}

// A lab's worker size is read as Kubernetes writes amounts, and a size
// that is not one, too large, or given to a lab with no workers says what
// to write instead.
func TestWorkerSize(t *testing.T) {
	lab, ps := Load(labFS(edit(t, validLab, "  workers: 1\n", "  workers: 1\n  worker: {cpu: 1500m, memory: 3Gi}\n")), "lab", bothLanguages)
	if len(ps) > 0 {
		t.Fatalf("a valid worker size: %v", ps)
	}
	if cpu, mem, err := lab.Cluster.Worker.Parse(); cpu != 1500 || mem != 3072 || err != nil {
		t.Fatalf("worker size read as %dm, %d MiB, %v", cpu, mem, err)
	}
	for _, c := range []struct{ size, message string }{
		{"{memory: 3GB of RAM}", `memory "3GB of RAM" is not a positive memory amount: write it as Kubernetes does (3Gi, 3072Mi)`},
		{"{cpu: -1}", `cpu "-1" is not a positive CPU amount`},
		{"{cpu: 64}", `cpu "64" is more than a lab may ask of one node (16000m)`},
		{"{memory: 3000}", `memory "3000" is less than 1Mi: write it with a unit`},
	} {
		ps := problems(t, labFS(edit(t, validLab, "  workers: 1\n", "  workers: 1\n  worker: "+c.size+"\n")))
		if w := (want{0, "cluster.worker", c.message}); !w.in(ps) {
			t.Errorf("worker %s: %v, want %v", c.size, ps, w)
		}
	}
	ps = problems(t, labFS(edit(t, validLab, "  workers: 1\n", "  workers: 0\n  worker: {memory: 3Gi}\n", "node: node01", "node: controlplane")))
	if w := (want{0, "cluster.worker", "this lab has none"}); !w.in(ps) {
		t.Errorf("a worker size with no workers: %v", ps)
	}
}

// A challenge's text names the goal, not the commands: a block to run is
// refused with what to do instead, output blocks are fine, and a guided
// lab may have all the commands it likes.
func TestChallengeTextHasNoCommands(t *testing.T) {
	fs := labFS(edit(t, validLab, "level: beginner", "level: beginner\nchallenge: true"))
	const step = "lab/steps/first.en.md"
	fs[step] = &fstest.MapFile{Data: []byte("Make node01 Ready again.\n\n```text\nNotReady\n```\n\n```bash node01\nsystemctl restart kubelet\n```\n")}
	ps := problems(t, fs)
	found := 0
	for _, p := range ps {
		if strings.Contains(p.Message, "a challenge's text gives the goal, not the commands") {
			found++
			if p.Line != 7 {
				t.Errorf("the command block reported at line %d, want 7", p.Line)
			}
		}
	}
	if found != 1 {
		t.Fatalf("%d command-block problems, want 1 (the bash block, not the text one):\n%v", found, ps)
	}
	fs = labFS(validLab)
	fs[step] = &fstest.MapFile{Data: []byte("```bash node01\nsystemctl restart kubelet\n```\n")}
	if ps := problems(t, fs); len(ps) != 0 {
		t.Fatalf("a guided lab's command block: %v", ps)
	}
}
