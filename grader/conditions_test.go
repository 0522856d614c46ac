package grader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/podpath/podpath/labs"
)

// These tests judge conditions over values already read: a leaf's "probe"
// is a command whose run: is the value it reads ("ERR ..." cannot read,
// "MISSING" reads nothing there), judged by the real matchers.

func is(v string) labs.Matcher { return labs.Matcher{Equals: &v} }

func leafOf(read string, m labs.Matcher) labs.Condition {
	return labs.Condition{Probe: labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: read}}, Expect: m}
}

// readValues judges leaves from their run: and counts the probes read.
func readValues(reads *[]string) func(*labs.Condition) outcome {
	return func(c *labs.Condition) outcome {
		if c.Probe.Script != nil {
			s := c.Probe.Script.Script
			*reads = append(*reads, "script")
			code := "1"
			if s == "exit 0" {
				code = "0"
			}
			return outcome{passed: s == "exit 0", obs: readValue(NoteScript, code).obs, feedback: scriptFeedback(s)}
		}
		run := c.Probe.Command.Run
		*reads = append(*reads, run)
		if msg, ok := strings.CutPrefix(run, "ERR "); ok {
			return outcome{obs: note(NoteCheckError, "detail", msg), probeErr: true}
		}
		v := readValue(NoteValue, run)
		if run == "MISSING" {
			v = nothing(NoteNoObject, "resource", "pods", "name", "web", "namespace", "default")
		}
		return leafOutcome(&c.Expect, v, func(*labs.Probe) (value, error) { return value{}, errors.New("no other probe here") })
	}
}

func TestCombinators(t *testing.T) {
	ge := func(f float64) labs.Matcher { return labs.Matcher{GE: &f} }
	not := func(c labs.Condition) labs.Condition { return labs.Condition{Not: &c} }
	cases := []struct {
		name     string
		c        labs.Condition
		passed   bool
		probeErr bool
		observed string
		reads    string
	}{
		{"allOf passes", labs.Condition{AllOf: []labs.Condition{leafOf("Running", is("Running")), leafOf("node01", is("node01"))}},
			true, false, "all 2 of allOf passed: Running; node01", "Running,node01"},
		{"allOf stops at the part that fails", labs.Condition{AllOf: []labs.Condition{leafOf("Running", is("Running")), leafOf("node02", is("node01")), leafOf("x", is("x"))}},
			false, false, "2nd of allOf: read node02", "Running,node02"},
		{"allOf with a probe that cannot read", labs.Condition{AllOf: []labs.Condition{leafOf("ERR no node \"node07\"", is("x")), leafOf("x", is("x"))}},
			false, true, "1st of allOf: no node \"node07\"", "ERR no node \"node07\""},
		{"anyOf stops at the part that passes", labs.Condition{AnyOf: []labs.Condition{leafOf("a", is("b")), leafOf("c", is("c")), leafOf("d", is("d"))}},
			true, false, "2nd of anyOf: read c", "a,c"},
		{"anyOf with none", labs.Condition{AnyOf: []labs.Condition{leafOf("a", is("b")), leafOf("", is("c"))}},
			false, false, "none of anyOf: 1st read a; 2nd read (empty)", "a,"},
		{"anyOf passes past a probe that cannot read", labs.Condition{AnyOf: []labs.Condition{leafOf("ERR API server down", is("b")), leafOf("c", is("c"))}},
			true, false, "2nd of anyOf: read c", "ERR API server down,c"},
		// The part that could not read might have passed: no verdict.
		{"anyOf fails with a probe that cannot read", labs.Condition{AnyOf: []labs.Condition{leafOf("ERR API server down", is("b")), leafOf("a", is("c"))}},
			false, true, "none of anyOf: 1st API server down; 2nd read a", "ERR API server down,a"},
		{"not of a value that does not match", not(leafOf("Pending", is("Running"))),
			true, false, "not: read Pending (does not match, as required)", "Pending"},
		{"not of a value that matches", not(leafOf("Running", is("Running"))),
			false, false, "not: read Running (it must not match)", "Running"},
		{"not of a probe that cannot read is no pass", not(leafOf("ERR could not run a command on node01: node down", is("Running"))),
			false, true, "not: could not run a command on node01: node down", ""},
		{"not of nothing to judge is no pass", not(leafOf("many", ge(3))),
			false, false, "not: read many (not a number) (nothing to judge, so no pass)", ""},
		{"not not of nothing to judge is no pass", not(not(leafOf("many", ge(3)))),
			false, false, "", ""},
		{"not of a missing object is judged", not(leafOf("MISSING", labs.Matcher{NonEmpty: true})),
			true, false, "not: read (no pods \"web\" in namespace default) (does not match, as required)", ""},
		{"not of a number", not(leafOf("250m", ge(0.5))), true, false, "", ""},
		{"nested", labs.Condition{AllOf: []labs.Condition{
			{AnyOf: []labs.Condition{leafOf("a", is("x")), leafOf("b", is("b"))}},
			not(labs.Condition{AllOf: []labs.Condition{leafOf("c", is("c")), leafOf("d", is("d"))}}),
		}}, false, false, "2nd of allOf: not: all 2 of allOf passed: c; d (it must not match)", "a,b,c,d"},
		{"allOf of nothing", labs.Condition{AllOf: []labs.Condition{}}, false, true, "allOf has no conditions", ""},
		{"a long value is cut", labs.Condition{AllOf: []labs.Condition{leafOf(strings.Repeat("x", 400), is("y"))}},
			false, false, "1st of allOf: read " + strings.Repeat("x", partMax-1) + "…", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var reads []string
			o := combine(&tc.c, readValues(&reads))
			if o.passed != tc.passed || o.probeErr != tc.probeErr || (tc.observed != "" && o.obs.Raw() != tc.observed) {
				t.Errorf("passed %v probeErr %v observed %q; want %v %v %q", o.passed, o.probeErr, o.obs.Raw(), tc.passed, tc.probeErr, tc.observed)
			}
			if got := strings.Join(reads, ","); tc.reads != "" && got != tc.reads {
				t.Errorf("probes read: %q, want %q", got, tc.reads)
			}
		})
	}
}

// A combined check that fails shows the FAIL: lines of the scripts that
// made it fail, in each language; a passing part's lines are not shown.
func TestCombinedScriptFeedback(t *testing.T) {
	script := func(s string) labs.Condition {
		return labs.Condition{Probe: labs.Probe{Script: &labs.ScriptProbe{Node: "node01", Script: s}}}
	}
	var reads []string
	c := labs.Condition{AnyOf: []labs.Condition{
		script("FAIL: no limits\nFAIL[zh]: 没有限制"),
		script("FAIL: no requests"),
	}}
	o := combine(&c, readValues(&reads))
	if o.passed || o.feedback.In("en") != "no limits\nno requests" || o.feedback.In("zh") != "没有限制\nno requests" {
		t.Errorf("anyOf of two failing scripts: passed %v feedback %v", o.passed, o.feedback)
	}
	c = labs.Condition{AllOf: []labs.Condition{script("exit 0"), script("FAIL[zh]: 没有请求")}}
	if o := combine(&c, readValues(&reads)); o.passed || o.feedback.In("en") != "没有请求" || !strings.HasPrefix(o.obs.Raw(), "2nd of allOf: exit 1") {
		t.Errorf("allOf failing at a script: %+v", o)
	}
	c = labs.Condition{Not: &labs.Condition{AllOf: []labs.Condition{script("exit 0")}}}
	if o := combine(&c, readValues(&reads)); o.passed || o.feedback != nil {
		t.Errorf("not of a passing script: %+v", o)
	}
}

func TestScriptFeedbackByLanguage(t *testing.T) {
	cases := []struct {
		out    string
		en, zh string
		none   bool
	}{
		{out: "checking\nFAIL: no limits\nFAIL[zh]: 没有限制\n  FAIL: and no requests  \nFAIL[zh]:  也没有请求\n", en: "no limits\nand no requests", zh: "没有限制\n也没有请求"},
		{out: "FAIL: only English", en: "only English", zh: "only English"},
		{out: "FAIL[zh]: 只有中文", en: "只有中文", zh: "只有中文"},
		{out: "FAIL[EN]: shouting\nFAIL[zh-CN]: 简体", en: "shouting", zh: "shouting"},
		{out: "FAILED: not a feedback line\nfail: nor this\n# FAIL: nor this", none: true},
		{out: "", none: true},
	}
	for _, c := range cases {
		fb := scriptFeedback(c.out)
		if c.none {
			if fb != nil {
				t.Errorf("%q: feedback %v, want none", c.out, fb)
			}
			continue
		}
		if fb.In("en") != c.en || fb.In("zh") != c.zh {
			t.Errorf("%q: en %q zh %q; want %q %q", c.out, fb.In("en"), fb.In("zh"), c.en, c.zh)
		}
	}
	if fb := scriptFeedback("FAIL[zh-CN]: 简体\nFAIL: x"); fb["zh-cn"] != "简体" {
		t.Errorf("a regional language tag: %v", fb)
	}
}

func TestQuantityAndNumbers(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	none := func(*labs.Probe) (value, error) { return value{}, errors.New("no other probe") }
	cases := []struct {
		m         labs.Matcher
		read      string
		ok        bool
		undecided bool
	}{
		{labs.Matcher{Quantity: "128Mi"}, "134217728", true, false},
		{labs.Matcher{Quantity: "128Mi"}, "128Mi", true, false},
		{labs.Matcher{Quantity: "128Mi"}, "0.125Gi", true, false},
		{labs.Matcher{Quantity: "128Mi"}, " 131072Ki\n", true, false},
		{labs.Matcher{Quantity: "128Mi"}, "128M", false, false},
		{labs.Matcher{Quantity: "128Mi"}, "134217729", false, false},
		{labs.Matcher{Quantity: "128Mi"}, "128 Mi", false, true},
		{labs.Matcher{Quantity: "128Mi"}, "", false, true},
		{labs.Matcher{Quantity: "500m"}, "0.5", true, false},
		{labs.Matcher{Quantity: "1"}, "1000m", true, false},
		{labs.Matcher{Quantity: "2"}, "2000m", true, false},
		{labs.Matcher{Quantity: "100m"}, "0.1", true, false},
		{labs.Matcher{Quantity: "1k"}, "1000", true, false},
		{labs.Matcher{Quantity: "1k"}, "1Ki", false, false},

		{labs.Matcher{GE: f(0.2)}, "250m", true, false},
		{labs.Matcher{GT: f(0.25)}, "250m", false, false},
		{labs.Matcher{LT: f(0.3)}, "250m", true, false},
		{labs.Matcher{GE: f(134217728)}, "128Mi", true, false},
		{labs.Matcher{GT: f(134217728)}, "128Mi", false, false},
		{labs.Matcher{LE: f(1000)}, "1Ki", false, false},
		{labs.Matcher{GE: f(2)}, " 2\n", true, false},
		{labs.Matcher{GE: f(1000)}, "1e3", true, false},
		{labs.Matcher{LT: f(0)}, "-1", true, false},
		{labs.Matcher{GE: f(1)}, "many", false, true},
		{labs.Matcher{GE: f(1)}, "", false, true},
		{labs.Matcher{GE: f(1)}, "2 3", false, true},
	}
	for _, c := range cases {
		vd, err := judgeValue(&c.m, value{s: c.read}, none)
		if err != nil || vd.ok != c.ok || vd.undecided != c.undecided {
			t.Errorf("%s %q: ok %v undecided %v err %v; want %v %v", c.m.Kind(), c.read, vd.ok, vd.undecided, err, c.ok, c.undecided)
		}
	}
	if vd, _ := judgeValue(&labs.Matcher{Quantity: "1Gi"}, readValue(NoteValue, "lots"), none); vd.obs == nil || vd.obs.Raw() != "lots (not a quantity)" {
		t.Errorf("note for a value that is no quantity: %+v", vd.obs)
	}
}

func TestOrdinal(t *testing.T) {
	var got []string
	for _, n := range []int{1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111} {
		got = append(got, ordinal(n))
	}
	if s := strings.Join(got, " "); s != "1st 2nd 3rd 4th 11th 12th 13th 21st 22nd 101st 111th" {
		t.Errorf("ordinals: %s", s)
	}
}

// nodes is a Target whose nodes print what a table says for each script,
// so that CheckStep runs end to end without a cluster.
type nodes map[string]struct {
	out  string
	code int
}

func (n nodes) Exec(ctx context.Context, node string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	script := cmd[len(cmd)-1]
	script = script[strings.Index(script, "\n")+1:] // after the KUBECONFIG line
	r, ok := n[node+" "+script]
	if !ok {
		return -1, fmt.Errorf("no node %q", node)
	}
	io.WriteString(stdout, r.out)
	return r.code, nil
}

func (nodes) RESTConfig(context.Context) (*rest.Config, error) {
	return nil, errors.New("no API server")
}

func TestCombinedCheckResults(t *testing.T) {
	target := nodes{
		"node01 hostname":     {out: "node01\n"},
		"node01 cat /x":       {out: "FAIL: the pod has no limits\nFAIL[zh]: Pod 没有限制\n", code: 1},
		"node01 echo Pending": {out: "Pending\n"},
	}
	g := New(target, &labs.Lab{})
	hints := []labs.Text{{"en": "first hint", "zh": "第一个提示"}}
	cmd := func(node, run string, m labs.Matcher) labs.Condition {
		return labs.Condition{Probe: labs.Probe{Command: &labs.CommandProbe{Node: node, Run: run}}, Expect: m}
	}
	step := &labs.Step{Checks: []labs.Check{
		{Name: labs.Text{"en": "all"}, AllOf: []labs.Condition{cmd("node01", "hostname", is("node01")), {Not: &labs.Condition{Probe: labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "echo Pending"}}, Expect: is("Running")}}}, Hints: hints},
		{Name: labs.Text{"en": "wrong"}, AnyOf: []labs.Condition{cmd("node01", "hostname", is("node02")), cmd("node01", "echo Pending", is("Running"))}, Hints: hints},
		{Name: labs.Text{"en": "script"}, AllOf: []labs.Condition{cmd("node01", "hostname", is("node01")), {Probe: labs.Probe{Script: &labs.ScriptProbe{Node: "node01", Script: "cat /x"}}}}, Hints: hints},
		{Name: labs.Text{"en": "node down"}, Not: &labs.Condition{Probe: labs.Probe{Command: &labs.CommandProbe{Node: "node07", Run: "hostname"}}, Expect: is("node07")}, Hints: hints},
	}}
	res := g.CheckStep(context.Background(), step, Options{Attempt: 1})
	if r := res[0]; !r.Passed || r.Observed != "all 2 of allOf passed: node01; not: read Pending (does not match, as required)" || r.Feedback != nil {
		t.Errorf("allOf that passes: %+v", r)
	}
	if r := res[1]; r.Passed || r.ProbeError || r.Observed != "none of anyOf: 1st read node01; 2nd read Pending" || r.Feedback.In("zh") != "第一个提示" {
		t.Errorf("anyOf that fails: %+v", r)
	}
	if r := res[2]; r.Passed || r.Feedback.In("en") != "the pod has no limits" || r.Feedback.In("zh") != "Pod 没有限制" || !strings.HasPrefix(r.Observed, "2nd of allOf: exit 1") {
		t.Errorf("allOf failing at a script: %+v", r)
	}
	if r := res[3]; r.Passed || !r.ProbeError || !strings.Contains(r.Observed, `not: could not run a command on node07: no node "node07"`) ||
		r.Feedback.In("en") != r.Words["en"] || r.Words["zh"] != `无法在 node07 上运行命令：no node "node07"` {
		t.Errorf("not of a node that is down: %+v", r)
	}
	if Passed(res) {
		t.Error("the step passed")
	}
}

// A Killercoda verify script talks to the learner in what it prints: its
// whole output, not only FAIL: lines, is the feedback when it fails.
func TestScriptOutputFeedback(t *testing.T) {
	target := nodes{
		"controlplane verify-bad":  {out: "checking the Pod\n❌ hello is not Running (phase: Pending)\n", code: 1},
		"controlplane verify-good": {out: "done\n"},
	}
	g := New(target, &labs.Lab{})
	check := func(script string) labs.Check {
		return labs.Check{Name: labs.Text{"en": "verify"}, Probe: labs.Probe{Script: &labs.ScriptProbe{Node: "controlplane", Script: script, Feedback: labs.FeedbackOutput}}}
	}
	res := g.CheckStep(context.Background(), &labs.Step{Checks: []labs.Check{check("verify-bad"), check("verify-good")}}, Options{Attempt: 1})
	if r := res[0]; r.Passed || r.Feedback.In("en") != "checking the Pod\n❌ hello is not Running (phase: Pending)" {
		t.Errorf("a failing verify script: %+v", r)
	}
	if r := res[1]; !r.Passed || r.Feedback != nil {
		t.Errorf("a verify script that exits 0 passes, and its output is no feedback: %+v", r)
	}
}
