package grader

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/podpath/podpath/labs"
)

func strp(s string) *string { return &s }

// Each observation says itself three ways: the grader's English as it is
// recorded (what Observed always was), and words for a learner in English
// and Chinese.
func TestObservationWords(t *testing.T) {
	v := func(s string) Observation { return readValue(NoteValue, s).obs }
	answer := func(s string) Observation { return readValue(NoteAnswer, s).obs }
	counted := v("web-1 web-2")
	counted.Readings = []labs.Reading{{Text: labs.Text{"en": "{count} Pods run", "zh": "有 {count} 个 Pod 在运行"}}}
	exit := v("0")
	exit.Readings = []labs.Reading{
		{Equals: strp("1"), Text: labs.Text{"en": "the file is gone", "zh": "文件已不在"}},
		{Equals: strp("0"), Text: labs.Text{"en": "the file is still there", "zh": "文件还在"}},
	}
	noWeb := nothing(NoteNoObject, "resource", "pods", "name", "web", "namespace", "default").obs
	cases := []struct {
		name        string
		o           Observation
		raw, en, zh string
	}{
		{"a value as read", v("Running"), "Running", "Running", "Running"},
		{"nothing", v(""), "(empty)", "nothing", "什么也没有"},
		{"lines", v("Scheduled\nPulled"), "Scheduled\nPulled", "Scheduled; Pulled", "Scheduled；Pulled"},
		{"a reading", exit, "0", "the file is still there", "文件还在"},
		{"no reading fits", v("2"), "2", "2", "2"},
		{"a count read by the lab", about(NoteCount, counted, "n", "2"), "2 (web-1 web-2)", "2 Pods run", "有 2 个 Pod 在运行"},
		{"a count", about(NoteCount, v("a b c"), "n", "3"), "3 (a b c)", "3 values: a b c", "3 个值：a b c"},
		{"no number", about(NoteNotNumber, v("many")), "many (not a number)", "many, which is not a number", "many，这不是数字"},
		{"the right answer", about(NoteSame, answer("4321")), "4321 (matches the cluster)", `your answer "4321" matches what your cluster shows`, "你的答案“4321”与你的集群中的一致"},
		{"a wrong answer", about(NoteNotSame, answer("1")), "1 (does not match what the cluster shows)", `your answer "1" does not match what your cluster shows`, "你的答案“1”与你的集群中的不一致"},
		{"no answer", answer(""), "(empty)", "no answer yet", "还没有填写答案"},
		{"differs", about(NoteDifferent, v("1900m"), "other", "2"), "1900m (differs, as it should: 2)", "1900m, which differs, as it should", "1900m，与对照的值不同，符合要求"},
		{"nothing to compare with", Observation{Note: NoteCannotCompare, Of: []Observation{answer("x"), noWeb}},
			`cannot compare: (no pods "web" in namespace default)`, `nothing to compare it with: there is no pods "web" in namespace default`, "无从比较：default 名字空间中没有 pods “web”"},
		{"a missing Node", nothing(NoteNoNode, "node", "node01").obs, "(no Node node01)", "there is no Node node01", "没有 Node 对象 node01"},
		{"no events of a missing object", nothing(NoteNoEventsObject, "resource", "nodes", "name", "node09", "namespace", "").obs,
			`(no nodes "node09", so no events of it)`, `there is no nodes "node09", so no events of it`, "没有 nodes “node09”，也就没有它的事件"},
		{"a unit", readValue(NoteUnit, "inactive", "node", "node01", "unit", "kubelet").obs, "inactive", "kubelet on node01 is inactive", "node01 上的 kubelet 处于 inactive 状态"},
		{"a condition", readValue(NoteCondition, "Unknown", "node", "node01", "type", "Ready").obs, "Unknown", "node01's Ready condition is Unknown", "node01 的 Ready 状况为 Unknown"},
		{"history", readValue(NoteHistory, "crictl ps\ncrictl inspect x").obs, "crictl ps\ncrictl inspect x", "you ran: crictl ps; crictl inspect x", "你运行过：crictl ps；crictl inspect x"},
		{"no history since the step", nothing(NoteNoMatch, "node", "node01", "since", "step").obs,
			"(no command run on node01 since this step began matches)", "no matching command has run on node01 since this step began", "这一步开始以来，node01 上还没有运行过相符的命令"},
		{"a script that failed", Observation{Note: NoteScript, Value: "1", Args: map[string]string{"output": "FAIL: no limits"}},
			"exit 1: FAIL: no limits", "a test of the check failed (exit code 1)", "这项检查有一项测试没有通过（退出码 1）"},
		{"a script that passed", Observation{Note: NoteScript, Value: "0"}, "exit 0", "every test of the check passed", "这项检查的各项测试都通过了"},
		{"still, after", about(NoteStillAfter, exit, "after", "1m30s"), "0 (still after 1m30s)", "the file is still there (still, after 1 min 30 s)", "文件还在（等了 1 分 30 秒，仍是如此）"},
		{"did not hold", about(NoteDidNotHold, v("Pending"), "for", "10s"), "Pending (it did not hold for 10s)", "Pending (it did not hold for 10 s)", "Pending（没能保持 10 秒）"},
		{"allOf stops at a part", about(NoteAllOfFailed, exit, "index", "2"), "2nd of allOf: read 0", "the file is still there", "文件还在"},
		{"allOf passed", Observation{Note: NoteAllOfPassed, Of: []Observation{v("Running"), exit}}, "all 2 of allOf passed: Running; 0", "Running; the file is still there", "Running；文件还在"},
		{"anyOf of none", Observation{Note: NoteAnyOfNone, Of: []Observation{v("3"), noWeb}},
			`none of anyOf: 1st read 3; 2nd read (no pods "web" in namespace default)`, `3; there is no pods "web" in namespace default`, "3；default 名字空间中没有 pods “web”"},
		{"not", about(NoteNotAccepted, v("controlplane")), "not: read controlplane (it must not match)", "controlplane", "controlplane"},
		{"a probe that could not read", errorObservation(failed(NoteTimedOut, "node", "node01")),
			"the command on node01 did not finish in time", "the command on node01 did not finish in time", "node01 上的命令没有按时结束"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.o.Raw(); got != tc.raw {
				t.Errorf("Raw = %q, want %q", got, tc.raw)
			}
			if got := tc.o.Words("en"); got != tc.en {
				t.Errorf("en = %q, want %q", got, tc.en)
			}
			if got := tc.o.Words("zh"); got != tc.zh {
				t.Errorf("zh = %q, want %q", got, tc.zh)
			}
		})
	}
}

// everyNote is every kind of observation, with args: what each says in
// Chinese must hold no English of podpath's own.
var everyNote = []Observation{
	readValue(NoteValue, "").obs, readValue(NoteAnswer, "").obs, readValue(NoteAnswer, "值").obs, readValue(NoteEvents, "").obs,
	readValue(NoteHistory, "值").obs, readValue(NoteUnit, "值", "node", "节点", "unit", "单元").obs, readValue(NoteUnit, "", "node", "节点", "unit", "单元").obs,
	readValue(NoteCondition, "值", "node", "节点", "type", "类型").obs, readValue(NoteScript, "0").obs, readValue(NoteScript, "1").obs,
	nothing(NoteNoObject, "resource", "资源", "name", "名", "namespace", "空间").obs, nothing(NoteNoObject, "resource", "资源", "name", "名").obs,
	nothing(NoteNoEventsObject, "resource", "资源", "name", "名", "namespace", "空间").obs, nothing(NoteNoFile, "path", "/路径", "node", "节点").obs,
	nothing(NoteNoNode, "node", "节点").obs, nothing(NoteNoCondition, "node", "节点", "type", "类型").obs,
	nothing(NoteCrictlFailed, "command", "命令", "node", "节点", "error", "错").obs, nothing(NoteNoHistory, "node", "节点").obs,
	nothing(NoteNoMatch, "node", "节点").obs, nothing(NoteNoMatch, "node", "节点", "since", "step").obs,
	about(NoteNotNumber, readValue(NoteValue, "值").obs), about(NoteNotQuantity, readValue(NoteValue, "值").obs),
	about(NoteCount, readValue(NoteValue, "").obs, "n", "0"), about(NoteCount, readValue(NoteValue, "值").obs, "n", "1"),
	{Note: NoteCannotCompare, Of: []Observation{readValue(NoteValue, "值").obs, nothing(NoteNoNode, "node", "节点").obs}},
	about(NoteNothingYet, readValue(NoteValue, "值").obs), about(NoteSame, readValue(NoteValue, "值").obs), about(NoteSame, readValue(NoteAnswer, "值").obs),
	about(NoteNotSame, readValue(NoteValue, "值").obs), about(NoteNotSame, readValue(NoteAnswer, "值").obs),
	about(NoteNotDifferent, readValue(NoteValue, "值").obs), about(NoteDifferent, readValue(NoteValue, "值").obs, "other", "other"),
	about(NoteStillAfter, readValue(NoteValue, "值").obs, "after", "30s"), about(NoteNotWaited, readValue(NoteValue, "值").obs),
	about(NoteDidNotHold, readValue(NoteValue, "值").obs, "for", "2m"), note(NoteCancelled),
	{Note: NoteAllOfPassed, Of: []Observation{readValue(NoteValue, "值").obs, readValue(NoteValue, "值").obs}},
	about(NoteAllOfFailed, readValue(NoteValue, "值").obs, "index", "1"), about(NoteAnyOfPassed, readValue(NoteValue, "值").obs, "index", "1"),
	{Note: NoteAnyOfNone, Of: []Observation{readValue(NoteValue, "值").obs, readValue(NoteValue, "值").obs}},
	about(NoteNotRejected, readValue(NoteValue, "值").obs), about(NoteNotAccepted, readValue(NoteValue, "值").obs),
	about(NoteNotUndecided, readValue(NoteValue, "值").obs), about(NoteNotError, note(NoteTimedOut, "node", "节点")),
	note(NoteNoAPI, "detail", "细节"), note(NoteNoResource, "resource", "资源"), note(NoteReadFailed, "resource", "资源", "name", "名", "detail", "细节"),
	note(NoteListFailed, "resource", "资源", "detail", "细节"), note(NoteJSONPath, "jsonpath", "路径", "detail", "细节"),
	note(NoteOutputTooLarge, "node", "节点", "mib", "1"), note(NoteExecFailed, "node", "节点", "detail", "细节"), note(NoteTimedOut, "node", "节点"),
	note(NoteNoJSON, "command", "命令", "output", "输出"), note(NoteNoJSON, "command", "命令"), note(NoteCheckError, "detail", "细节"),
}

// Names that Chinese text keeps as they are (GLOSSARY.zh.md, rules 1, 3, 4).
var keptNames = regexp.MustCompile(`\b(Node|Kubernetes|API|JSONPath|JSON|MiB|crictl|podpath)\b`)

func TestChineseWordsHaveNoEnglish(t *testing.T) {
	seen := map[Note]bool{}
	for _, o := range everyNote {
		seen[o.Note] = true
		zh := keptNames.ReplaceAllString(o.Words("zh"), "")
		if regexp.MustCompile(`[A-Za-z]`).MatchString(zh) {
			t.Errorf("%s says in Chinese %q: English left in it", o.Note, o.Words("zh"))
		}
		passThrough := map[Note]bool{NoteValue: true, NoteAllOfFailed: true, NoteAnyOfPassed: true, NoteNotRejected: true, NoteNotAccepted: true}
		if o.Words("en") == o.Words("zh") && !passThrough[o.Note] {
			t.Errorf("%s says the same in English and Chinese: %q", o.Note, o.Words("en"))
		}
		if strings.Contains(o.Words("zh"), "{") {
			t.Errorf("%s left a placeholder unfilled: %q", o.Note, o.Words("zh"))
		}
	}
	if len(seen) != 46 {
		t.Errorf("%d kinds of notes tried, of 46; add new ones to everyNote", len(seen))
	}
}

// Through CheckStep: the lab's readings and the grader's notes reach the
// result's words in each language, and Observed keeps the raw value.
func TestCheckResultWords(t *testing.T) {
	target := nodes{
		"controlplane test -e /etc/kubernetes/manifests/kube-scheduler.yaml": {code: 0},
		"node01 echo 4321":           {out: "4321\n"},
		"node01 echo Pending/node01": {out: "Pending/node01\n"},
	}
	g := New(target, &labs.Lab{})
	g.PollInterval = 100 * time.Millisecond
	hints := []labs.Text{{"en": "hint", "zh": "提示"}, {"en": "more", "zh": "更多"}}
	step := &labs.Step{Checks: []labs.Check{
		{Name: labs.Text{"en": "manifest out"}, Hints: hints,
			Probe:  labs.Probe{Command: &labs.CommandProbe{Node: "controlplane", Run: "test -e /etc/kubernetes/manifests/kube-scheduler.yaml", Output: "exitCode"}},
			Expect: is("1"),
			Observed: []labs.Reading{
				{Equals: strp("1"), Text: labs.Text{"en": "the manifest is out", "zh": "清单已移走"}},
				{Equals: strp("0"), Text: labs.Text{"en": "the manifest is still in the folder", "zh": "清单还在该目录中"}},
			}},
		{Name: labs.Text{"en": "pid"}, Hints: hints,
			Probe:  labs.Probe{Answer: &labs.AnswerProbe{}},
			Expect: labs.Matcher{SameAs: &labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "echo 4321"}}}},
		{Name: labs.Text{"en": "pending"}, Hints: hints, Within: labs.Duration(300 * time.Millisecond),
			AllOf: []labs.Condition{{
				Probe:    labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "echo Pending/node01"}},
				Expect:   is("Running/node01"),
				Observed: []labs.Reading{{Matches: "^Pending/", Text: labs.Text{"en": "the Pod is Pending", "zh": "Pod 处于 Pending 状态"}}},
			}}},
	}}
	res := g.CheckStep(context.Background(), step, Options{Attempt: 1, Answer: "1234"})
	if r := res[0]; r.Passed || r.Observed != "0" || r.Words["zh"] != "清单还在该目录中" || r.Words["en"] != "the manifest is still in the folder" {
		t.Errorf("exit code with readings: %+v", r)
	}
	// The real PID is never in what the learner reads.
	if r := res[1]; r.Passed || r.Words["zh"] != "你的答案“1234”与你的集群中的不一致" || strings.Contains(r.Words["en"]+r.Words["zh"]+r.Observed, "4321") {
		t.Errorf("a wrong answer: %+v", r)
	}
	if r := res[2]; r.Passed || r.Observed != "1st of allOf: read Pending/node01 (not waited for: another check of this step failed)" ||
		r.Words["zh"] != "Pod 处于 Pending 状态（没有再等：这一步的另一项检查没有通过）" {
		t.Errorf("allOf with a reading, over time: %+v", r)
	}
	// Alone, it waits out its within.
	res = g.CheckStep(context.Background(), &labs.Step{Checks: step.Checks[2:]}, Options{Attempt: 1})
	if r := res[0]; r.Words["en"] != "the Pod is Pending (still, after 300 ms)" || r.Words["zh"] != "Pod 处于 Pending 状态（等了 300 毫秒，仍是如此）" {
		t.Errorf("after within: %+v", r)
	}
}
