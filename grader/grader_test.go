package grader_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/podpath/podpath/grader"
	"github.com/podpath/podpath/internal/dockercli"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/sandbox"
)

const cluster = "t-grader"

// The lab the checks below run under: a pod manifest to apply and a file to copy.
var labFiles = fstest.MapFS{
	"g/manifests/pod.yaml": {Data: []byte(`apiVersion: v1
kind: Pod
metadata:
  name: probe-me
  labels: {app: probe-me}
spec:
  nodeName: node01
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: podpath.local/tools:bookworm
    imagePullPolicy: Never
    command: ["sleep", "infinity"]
`)},
	"g/files/hello.txt": {Data: []byte("hello from the lab\n")},
	// A Pod deleted and created again under its name, with resources
	// written as a learner might (the API server stores them canonically).
	"g/manifests/again.yaml": {Data: []byte(`apiVersion: v1
kind: Pod
metadata:
  name: again
spec:
  nodeName: node01
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: podpath.local/tools:bookworm
    imagePullPolicy: Never
    command: ["sleep", "infinity"]
    resources:
      requests: {cpu: 250m, memory: 0.125Gi}
      limits: {cpu: "0.5", memory: 128Mi}
`)},
}

func testLab() *labs.Lab {
	return &labs.Lab{ID: "g", Cluster: labs.Cluster{Workers: 1}, Files: func(name string) ([]byte, error) {
		return labFiles.ReadFile("g/" + name)
	}}
}

func check(probe labs.Probe, expect labs.Matcher) labs.Check {
	return labs.Check{Name: labs.Text{"en": "c"}, Probe: probe, Expect: expect, Hints: []labs.Text{{"en": "first hint"}, {"en": "second hint"}}}
}

func judge(t *testing.T, g *grader.Grader, c labs.Check, opts grader.Options) grader.Result {
	t.Helper()
	return g.CheckStep(context.Background(), &labs.Step{Checks: []labs.Check{c}}, opts)[0]
}

// waiting gives a check 30 s to come true: kubelet posts its events on
// its own time, and a Running Pod's Started event may not be in yet.
func waiting(c labs.Check) labs.Check {
	c.Within = labs.Duration(30 * time.Second)
	return c
}

func str(s string) *string   { return &s }
func num(f float64) *float64 { return &f }

func TestGraderOnARealCluster(t *testing.T) {
	testenv.NodeImage(t)
	m := sandbox.NewManager()
	ctx := context.Background()
	_ = m.Delete(ctx, cluster)
	if _, err := m.Create(ctx, sandbox.Spec{Name: cluster, Workers: 1}, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Delete(context.Background(), cluster) })
	g := grader.New(m.Target(cluster), testLab())
	g.PollInterval = 500 * time.Millisecond

	t.Run("actions", func(t *testing.T) {
		var answer string
		err := g.Run(ctx, []labs.Action{
			{Apply: "manifests/pod.yaml"},
			{Copy: "files/hello.txt", To: "/root/lab/hello.txt", Node: "node01"},
			{Run: "echo ran > /tmp/ran", Node: "node01"},
			{Wait: &labs.WaitAction{
				Probe:   labs.Probe{Kube: &labs.KubeProbe{Resource: "pods", Name: "probe-me", JSONPath: "{.status.phase}"}},
				Expect:  labs.Matcher{Equals: str("Running")},
				Timeout: labs.Duration(2 * time.Minute)}},
			{Answer: &labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "cat /tmp/ran"}}},
		}, &answer)
		if err != nil {
			t.Fatal(err)
		}
		if answer != "ran" {
			t.Errorf("answer action gave %q", answer)
		}
		err = g.Run(ctx, []labs.Action{{Run: "exit 7", Node: "node01"}}, nil)
		if err == nil || !strings.Contains(err.Error(), "exited 7") || !strings.Contains(err.Error(), "action 1 (run)") {
			t.Errorf("a failing run action: %v", err)
		}
		if err := g.Run(ctx, []labs.Action{{Run: "exit 7", AllowFail: true}}, nil); err != nil {
			t.Errorf("allowFail: %v", err)
		}
		err = g.Run(ctx, []labs.Action{{Wait: &labs.WaitAction{
			Probe: labs.Probe{File: &labs.FileProbe{Node: "node01", Path: "/nope"}}, Expect: labs.Matcher{NonEmpty: true}, Timeout: labs.Duration(2 * time.Second)}}}, nil)
		if err == nil || !strings.Contains(err.Error(), "waited 2s") {
			t.Errorf("a wait that times out: %v", err)
		}
	})

	cases := []struct {
		name     string
		check    labs.Check
		answer   string
		pass     bool
		observed string
	}{
		{"kube object", check(labs.Probe{Kube: &labs.KubeProbe{Resource: "po", Name: "probe-me", JSONPath: "{.spec.nodeName}"}}, labs.Matcher{Equals: str("node01")}), "", true, "node01"},
		{"kube list by selector", check(labs.Probe{Kube: &labs.KubeProbe{Resource: "pods", Selector: "app=probe-me", JSONPath: "{.items[*].metadata.name}"}}, labs.Matcher{Count: &labs.Matcher{Equals: str("1")}}), "", true, "1 (probe-me)"},
		{"kube cluster-scoped", check(labs.Probe{Kube: &labs.KubeProbe{Resource: "nodes", JSONPath: "{.items[*].metadata.name}"}}, labs.Matcher{Contains: "controlplane"}), "", true, ""},
		{"kube group.resource", check(labs.Probe{Kube: &labs.KubeProbe{Resource: "deployments.apps", Namespace: "kube-system", Name: "coredns", JSONPath: "{.spec.replicas}"}}, labs.Matcher{GE: num(1)}), "", true, "2"},
		{"kube missing object", check(labs.Probe{Kube: &labs.KubeProbe{Resource: "pods", Name: "ghost", JSONPath: "{.metadata.name}"}}, labs.Matcher{NonEmpty: true}), "", false, `(no pods "ghost" in namespace default)`},
		{"node condition", check(labs.Probe{NodeCondition: &labs.NodeConditionProbe{Node: "node01", Type: "Ready"}}, labs.Matcher{Equals: str("True")}), "", true, "True"},
		// The Pod names its node itself, so no scheduler event comes first.
		// In order, whatever else kubelet reports between them (a
		// FailedMount of the service-account volume on a fresh cluster).
		{"events and who wrote them", waiting(check(labs.Probe{Events: &labs.EventsProbe{Kind: "Pod", Name: "probe-*", Field: "reason component"}}, labs.Matcher{Matches: `(?m)^Pulled kubelet$[\s\S]*^Created kubelet$[\s\S]*^Started kubelet$`})), "", true, ""},
		{"events of one reason", waiting(check(labs.Probe{Events: &labs.EventsProbe{Kind: "Pod", Name: "probe-me", Reason: "Started", Field: "component"}}, labs.Matcher{Equals: str("kubelet")})), "", true, "kubelet"},
		{"command stdout", check(labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "hostname"}}, labs.Matcher{Equals: str("node01")}), "", true, "node01"},
		{"command exit code", check(labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "exit 3", Output: "exitCode"}}, labs.Matcher{Equals: str("3")}), "", true, "3"},
		{"kubectl on the control plane", check(labs.Probe{Command: &labs.CommandProbe{Node: "controlplane", Run: "kubectl get pod probe-me -o jsonpath='{.metadata.name}'"}}, labs.Matcher{Equals: str("probe-me")}), "", true, ""},
		{"file", check(labs.Probe{File: &labs.FileProbe{Node: "node01", Path: "/root/lab/hello.txt"}}, labs.Matcher{Contains: "from the lab"}), "", true, "hello from the lab"},
		{"missing file", check(labs.Probe{File: &labs.FileProbe{Node: "node01", Path: "/nope"}}, labs.Matcher{NonEmpty: true}), "", false, "(no file /nope on node01)"},
		{"crictl JSON", check(labs.Probe{Crictl: &labs.CrictlProbe{Node: "node01", Command: "ps --name '^main$' -o json", JSONPath: "{.containers[0].labels.io\\.kubernetes\\.pod\\.name}"}}, labs.Matcher{Equals: str("probe-me")}), "", true, "probe-me"},
		{"systemd unit", check(labs.Probe{Unit: &labs.UnitProbe{Node: "node01", Unit: "kubelet"}}, labs.Matcher{Equals: str("active")}), "", true, "active"},
		{"answer same as the cluster", check(labs.Probe{Answer: &labs.AnswerProbe{}}, labs.Matcher{SameAs: &labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "hostname"}}}), " node01 ", true, "node01 (matches the cluster)"},
		{"wrong answer does not show the real value", check(labs.Probe{Answer: &labs.AnswerProbe{}}, labs.Matcher{SameAs: &labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "hostname"}}}), "node02", false, "node02 (does not match what the cluster shows)"},
		{"empty answer never matches", check(labs.Probe{Answer: &labs.AnswerProbe{}}, labs.Matcher{SameAs: &labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "true"}}}), "", false, "(empty)"},
		{"answer by prefix", check(labs.Probe{Answer: &labs.AnswerProbe{}}, labs.Matcher{MinPrefix: 4, SameAs: &labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "echo abcdef123456"}}}), "abcdef", true, ""},
		{"prefix too short", check(labs.Probe{Answer: &labs.AnswerProbe{}}, labs.Matcher{MinPrefix: 4, SameAs: &labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "echo abcdef123456"}}}), "abc", false, ""},
		{"ignore case", check(labs.Probe{Answer: &labs.AnswerProbe{}}, labs.Matcher{IgnoreCase: true, Equals: str("kubelet")}), "Kubelet", true, ""},
		{"net namespaces differ between nodes", check(labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "readlink /proc/1/ns/net"}}, labs.Matcher{DiffersFrom: &labs.Probe{Command: &labs.CommandProbe{Node: "controlplane", Run: "readlink /proc/1/ns/net"}}}), "", true, ""},
		{"number comparison on text", check(labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "echo many"}}, labs.Matcher{GT: num(1)}), "", false, "many (not a number)"},
		{"not contains", check(labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "echo abc"}}, labs.Matcher{NotContains: "z"}), "", true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := judge(t, g, tc.check, grader.Options{Answer: tc.answer, Attempt: 1})
			if r.Passed != tc.pass || (tc.observed != "" && r.Observed != tc.observed) {
				t.Errorf("passed %v observed %q feedback %v; want passed %v observed %q", r.Passed, r.Observed, r.Feedback, tc.pass, tc.observed)
			}
			if !r.Passed && !r.ProbeError && r.Feedback["en"] != "first hint" {
				t.Errorf("failed check's feedback %v, want the first hint", r.Feedback)
			}
		})
	}

	t.Run("allOf, anyOf, not", func(t *testing.T) {
		phase := labs.Condition{Probe: labs.Probe{Kube: &labs.KubeProbe{Resource: "pods", Name: "probe-me", JSONPath: "{.status.phase}"}}, Expect: labs.Matcher{Equals: str("Running")}}
		node := func(name string) labs.Condition {
			return labs.Condition{Probe: labs.Probe{Kube: &labs.KubeProbe{Resource: "pods", Name: "probe-me", JSONPath: "{.spec.nodeName}"}}, Expect: labs.Matcher{Equals: str(name)}}
		}
		hostname := func(node, want string) labs.Condition {
			return labs.Condition{Probe: labs.Probe{Command: &labs.CommandProbe{Node: node, Run: "hostname"}}, Expect: labs.Matcher{Equals: str(want)}}
		}
		not := func(c labs.Condition) *labs.Condition { return &c }
		combined := func(c labs.Check) labs.Check {
			c.Name, c.Hints = labs.Text{"en": "c"}, []labs.Text{{"en": "first hint"}, {"en": "second hint"}}
			return c
		}
		cases := []struct {
			name     string
			check    labs.Check
			pass     bool
			probeErr bool
			observed string
		}{
			{"allOf", combined(labs.Check{AllOf: []labs.Condition{phase, {Not: not(hostname("node01", "node02"))}}}), true, false,
				"all 2 of allOf passed: Running; not: read node01 (does not match, as required)"},
			{"allOf failing at its 2nd", combined(labs.Check{AllOf: []labs.Condition{phase, node("controlplane")}}), false, false, "2nd of allOf: read node01"},
			{"anyOf", combined(labs.Check{AnyOf: []labs.Condition{node("controlplane"), node("node01")}}), true, false, "2nd of anyOf: read node01"},
			{"anyOf of none", combined(labs.Check{AnyOf: []labs.Condition{node("controlplane"), hostname("node01", "x")}}), false, false, "none of anyOf: 1st read node01; 2nd read node01"},
			{"not", combined(labs.Check{Not: not(node("controlplane"))}), true, false, "not: read node01 (does not match, as required)"},
			{"not of a value that matches", combined(labs.Check{Not: not(phase)}), false, false, "not: read Running (it must not match)"},
			{"not of an object that is not there", combined(labs.Check{Not: not(labs.Condition{Probe: labs.Probe{Kube: &labs.KubeProbe{Resource: "pods", Name: "ghost", JSONPath: "{.metadata.name}"}}, Expect: labs.Matcher{NonEmpty: true}})}), true, false, ""},
			// A node that is not there cannot make a not pass.
			{"not of a probe that cannot read", combined(labs.Check{Not: not(hostname("node07", "node07"))}), false, true, ""},
			{"nested", combined(labs.Check{AllOf: []labs.Condition{{AnyOf: []labs.Condition{node("controlplane"), node("node01")}}, {Not: not(labs.Condition{AllOf: []labs.Condition{phase, hostname("node01", "node01")}})}}}), false, false,
				"2nd of allOf: not: all 2 of allOf passed: Running; node01 (it must not match)"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := judge(t, g, tc.check, grader.Options{Attempt: 1})
				if r.Passed != tc.pass || r.ProbeError != tc.probeErr || (tc.observed != "" && r.Observed != tc.observed) {
					t.Errorf("passed %v probeError %v observed %q; want %v %v %q", r.Passed, r.ProbeError, r.Observed, tc.pass, tc.probeErr, tc.observed)
				}
				if !r.Passed && !r.ProbeError && r.Feedback["en"] != "first hint" {
					t.Errorf("failed check's feedback %v, want the first hint", r.Feedback)
				}
			})
		}
	})

	t.Run("events of the Pod there now, and quantities", func(t *testing.T) {
		running := &labs.WaitAction{Probe: labs.Probe{Kube: &labs.KubeProbe{Resource: "pods", Name: "again", JSONPath: "{.status.phase}"}},
			Expect: labs.Matcher{Equals: str("Running")}, Timeout: labs.Duration(2 * time.Minute)}
		var oldUID string
		err := g.Run(ctx, []labs.Action{
			{Apply: "manifests/again.yaml"}, {Wait: running},
			{Answer: &labs.Probe{Kube: &labs.KubeProbe{Resource: "pods", Name: "again", JSONPath: "{.metadata.uid}"}}},
		}, &oldUID)
		if err != nil {
			t.Fatal(err)
		}
		started := func(e labs.EventsProbe) labs.Check {
			e.Kind, e.Name = "Pod", "again"
			c := check(labs.Probe{Events: &e}, labs.Matcher{NonEmpty: true})
			c.Within = labs.Duration(30 * time.Second)
			return c
		}
		// The first Pod's container has started before it is deleted.
		if r := judge(t, g, started(labs.EventsProbe{Reason: "Started"}), grader.Options{}); !r.Passed {
			t.Fatalf("no Started event of the first Pod: %+v", r)
		}
		err = g.Run(ctx, []labs.Action{
			{Run: "kubectl delete pod again --wait=true --timeout=60s"},
			{Apply: "manifests/again.yaml"}, {Wait: running},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		count := func(e labs.EventsProbe, n string) labs.Check {
			c := started(e)
			c.Expect = labs.Matcher{Count: &labs.Matcher{Equals: str(n)}}
			return c
		}
		cases := []struct {
			name     string
			check    labs.Check
			observed string
		}{
			// Without uidOf, the deleted Pod's events count too.
			{"by name", count(labs.EventsProbe{Reason: "Started"}, "2"), ""},
			{"uidOf", count(labs.EventsProbe{Reason: "Started", UIDOf: &labs.ObjectRef{Resource: "pods"}}, "1"), ""},
			{"uidOf with its own name", count(labs.EventsProbe{Reason: "Pulled", UIDOf: &labs.ObjectRef{Resource: "po", Namespace: "default", Name: "again"}}, "1"), ""},
			{"uid of the deleted Pod", count(labs.EventsProbe{Reason: "Started", UID: oldUID}, "1"), ""},
			{"latest", func() labs.Check {
				c := started(labs.EventsProbe{Pick: "latest", UIDOf: &labs.ObjectRef{Resource: "pods"}, Field: "reason component"})
				c.Expect = labs.Matcher{Equals: str("Started kubelet")}
				return c
			}(), "Started kubelet"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				if r := judge(t, g, tc.check, grader.Options{}); !r.Passed || (tc.observed != "" && r.Observed != tc.observed) {
					t.Errorf("%+v", r)
				}
			})
		}
		t.Run("uidOf an object that is not there", func(t *testing.T) {
			c := check(labs.Probe{Events: &labs.EventsProbe{Kind: "Pod", Name: "ghost", UIDOf: &labs.ObjectRef{Resource: "pods"}}}, labs.Matcher{Empty: true})
			if r := judge(t, g, c, grader.Options{}); r.ProbeError || r.Observed != `(no pods "ghost" in namespace default, so no events of it)` {
				t.Errorf("%+v", r)
			}
		})

		resources := func(path string, m labs.Matcher) labs.Check {
			return check(labs.Probe{Kube: &labs.KubeProbe{Resource: "pods", Name: "again", JSONPath: "{.spec.containers[0].resources." + path + "}"}}, m)
		}
		for _, tc := range []struct {
			name  string
			check labs.Check
			pass  bool
		}{
			{"0.125Gi is 128Mi", resources("requests.memory", labs.Matcher{Quantity: "128Mi"}), true},
			{"in bytes", resources("limits.memory", labs.Matcher{Quantity: "134217728"}), true},
			{"not 128M", resources("requests.memory", labs.Matcher{Quantity: "128M"}), false},
			{"0.5 is 500m", resources("limits.cpu", labs.Matcher{Quantity: "500m"}), true},
			{"250m ge 0.2", resources("requests.cpu", labs.Matcher{GE: num(0.2)}), true},
			{"250m lt 0.25", resources("requests.cpu", labs.Matcher{LT: num(0.25)}), false},
			{"128Mi gt 100 million", resources("limits.memory", labs.Matcher{GT: num(100e6)}), true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if r := judge(t, g, tc.check, grader.Options{Attempt: 1}); r.Passed != tc.pass || r.ProbeError {
					t.Errorf("%+v, want passed %v", r, tc.pass)
				}
			})
		}
		if err := g.Run(ctx, []labs.Action{{Delete: "manifests/again.yaml"}}, nil); err != nil {
			t.Error(err)
		}
	})

	t.Run("history of the learner's shell", func(t *testing.T) {
		c := check(labs.Probe{History: &labs.HistoryProbe{Node: "node01", Matches: `crictl\s+pods`}}, labs.Matcher{NonEmpty: true})
		if r := judge(t, g, c, grader.Options{}); r.Passed {
			t.Fatalf("history matched before anything was typed: %+v", r)
		}
		// Type in a real interactive login shell, as the terminal does.
		var out bytes.Buffer
		if _, err := m.Exec(ctx, cluster, "node01", []string{"script", "-qec", "bash -il", "/dev/null"}, strings.NewReader("crictl pods --name probe-me\nexit\n"), &out, &out); err != nil {
			t.Fatal(err)
		}
		r := judge(t, g, c, grader.Options{})
		if !r.Passed || !strings.Contains(r.Observed, "crictl pods --name probe-me") {
			t.Errorf("after typing: %+v (shell output %q)", r, out.String())
		}
	})

	t.Run("hints grow with attempts", func(t *testing.T) {
		c := check(labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "echo no"}}, labs.Matcher{Equals: str("yes")})
		for attempt, want := range map[int]string{1: "first hint", 2: "second hint", 5: "second hint"} {
			if r := judge(t, g, c, grader.Options{Attempt: attempt}); r.Feedback["en"] != want {
				t.Errorf("attempt %d: %v, want %q", attempt, r.Feedback, want)
			}
		}
	})

	t.Run("script escape hatch", func(t *testing.T) {
		pass := labs.Check{Name: labs.Text{"en": "s"}, Probe: labs.Probe{Script: &labs.ScriptProbe{Node: "node01", Script: "test -f /tmp/ran && echo fine"}}}
		if r := judge(t, g, pass, grader.Options{}); !r.Passed || !strings.Contains(r.Observed, "fine") {
			t.Errorf("passing script: %+v", r)
		}
		fail := labs.Check{Name: labs.Text{"en": "s"}, Probe: labs.Probe{Script: &labs.ScriptProbe{Node: "node01", Script: "echo 'FAIL: the pod has no limits'; echo 'FAIL: and no requests'; exit 1"}}}
		r := judge(t, g, fail, grader.Options{})
		if r.Passed || r.Feedback["en"] != "the pod has no limits\nand no requests" {
			t.Errorf("failing script: %+v", r)
		}
		zh := labs.Check{Name: labs.Text{"en": "s"}, Probe: labs.Probe{Script: &labs.ScriptProbe{Node: "node01", Script: "echo 'FAIL: no limits'; echo 'FAIL[zh]: 没有限制' >&2; exit 1"}}}
		if r := judge(t, g, zh, grader.Options{}); r.Passed || r.Feedback.In("en") != "no limits" || r.Feedback.In("zh") != "没有限制" {
			t.Errorf("failing script in two languages: %+v", r)
		}
	})

	t.Run("within and holds", func(t *testing.T) {
		run := func(script string) {
			if _, err := m.Exec(ctx, cluster, "node01", []string{"sh", "-c", script}, nil, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		// The file appears a second after the test says go, not after a
		// delay the execs' own latency could eat (a loaded host).
		run("rm -f /tmp/late /tmp/go /tmp/read; (until [ -e /tmp/go ]; do sleep 0.1; done; sleep 1; touch /tmp/late) >/dev/null 2>&1 &")
		c := check(labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "test -f /tmp/late", Output: "exitCode"}}, labs.Matcher{Equals: str("0")})
		if r := judge(t, g, c, grader.Options{}); r.Passed {
			t.Fatal("the file exists before it should")
		}
		run("touch /tmp/go")
		c.Within = labs.Duration(30 * time.Second)
		if r := judge(t, g, c, grader.Options{}); !r.Passed {
			t.Errorf("within: %+v", r)
		}
		c.Within, c.Holds = 0, labs.Duration(4*time.Second)
		if r := judge(t, g, c, grader.Options{}); !r.Passed {
			t.Errorf("holds on a stable value: %+v", r)
		}
		// The file goes a second after the check's first read: the first
		// read passes, a later one within the 4 s does not.
		run("(until [ -e /tmp/read ]; do sleep 0.1; done; sleep 1; rm -f /tmp/late) >/dev/null 2>&1 &")
		changing := check(labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "touch /tmp/read; test -f /tmp/late", Output: "exitCode"}}, labs.Matcher{Equals: str("0")})
		changing.Holds = labs.Duration(4 * time.Second)
		if r := judge(t, g, changing, grader.Options{}); r.Passed || !strings.Contains(r.Observed, "did not hold for 4s") {
			t.Errorf("holds on a value that changes: %+v", r)
		}
		c.Within = labs.Duration(30 * time.Second)
		if r := judge(t, g, c, grader.Options{NoWait: true}); r.Passed {
			t.Errorf("NoWait still waited: %+v", r)
		}
	})

	t.Run("a failed step stops its waiting checks", func(t *testing.T) {
		waits := check(labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "echo never"}}, labs.Matcher{Equals: str("ready")})
		waits.Within = labs.Duration(5 * time.Minute)
		fails := check(labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "echo no"}}, labs.Matcher{Equals: str("yes")})
		res := g.CheckStep(ctx, &labs.Step{Checks: []labs.Check{waits, fails}}, grader.Options{Attempt: 1})
		if res[0].Passed || res[1].Passed || !strings.Contains(res[0].Observed, "not waited for") {
			t.Errorf("results %+v", res)
		}
	})

	t.Run("a probe that cannot read says so", func(t *testing.T) {
		r := judge(t, g, check(labs.Probe{Command: &labs.CommandProbe{Node: "node07", Run: "true"}}, labs.Matcher{Equals: str("x")}), grader.Options{})
		if r.Passed || !r.ProbeError || !strings.Contains(r.Observed, `no node "node07"`) || r.Feedback["en"] != r.Words["en"] || r.Feedback["zh"] != r.Words["zh"] {
			t.Errorf("unknown node: %+v", r)
		}
		// With the control plane frozen, the API server does not answer.
		info, _ := m.Get(ctx, cluster)
		cp, _ := info.Node("controlplane")
		if err := dockercli.Run(ctx, "pause", cp.Container); err != nil {
			t.Fatal(err)
		}
		defer dockercli.Run(ctx, "unpause", cp.Container)
		c := check(labs.Probe{Kube: &labs.KubeProbe{Resource: "pods", Name: "probe-me", JSONPath: "{.status.phase}"}}, labs.Matcher{Equals: str("Running")})
		c.Timeout = labs.Duration(5 * time.Second)
		r = judge(t, g, c, grader.Options{})
		if r.Passed || !r.ProbeError || !strings.Contains(r.Observed, "could not read pods probe-me") {
			t.Errorf("API server down: %+v", r)
		}
	})

	t.Run("delete action", func(t *testing.T) {
		if err := g.Run(ctx, []labs.Action{{Delete: "manifests/pod.yaml"}}, nil); err != nil {
			t.Fatal(err)
		}
		c := check(labs.Probe{Kube: &labs.KubeProbe{Resource: "pods", Name: "probe-me", JSONPath: "{.metadata.name}"}}, labs.Matcher{Empty: true})
		c.Within = labs.Duration(60 * time.Second)
		if r := judge(t, g, c, grader.Options{}); !r.Passed {
			t.Errorf("pod still there after delete: %+v", r)
		}
	})
}
