package labtest

import (
	"slices"
	"strings"
	"testing"

	"github.com/podpath/podpath/grader"

	"github.com/podpath/podpath/labs"
)

func TestAnswerGuessesTakeWhatTheTextsShow(t *testing.T) {
	lab := &labs.Lab{Summary: labs.Text{"en": "Services get `10.96.0.10` for DNS."}}
	step := &labs.Step{
		Body: labs.Text{"en": "The quota is `cpu.cfs_quota_us`: read it.", "zh": "读取 25000 这个值"},
		Checks: []labs.Check{{Name: labs.Text{"en": "exit code"}, Hints: []labs.Text{{"en": "128+9 is 137"}},
			AllOf: []labs.Condition{{Observed: []labs.Reading{{Text: labs.Text{"en": "{value}", "zh": "容器以 `SIGKILL` 结束"}}}}}}},
	}
	got := answerGuesses(lab, step, nil, nil)
	for _, want := range []string{"", "10.96.0.10", "cpu.cfs_quota_us", "25000", "137", "128+9", "SIGKILL"} {
		if !slices.Contains(got, want) {
			t.Errorf("guesses %q lack %q", got, want)
		}
	}
	if got[1] != "10.96.0.10" {
		t.Errorf("code spans go first, got %q", got[:3])
	}
}

// Another session's expected answers and the text it reads are guesses
// too, and the step text is read as rendered with the session's values.
func TestAnswerGuessesTakeAnotherSessions(t *testing.T) {
	lab := &labs.Lab{ID: "v", Values: []labs.Value{{Name: "cpu", OneOf: []string{"200", "300"}}}}
	step := labs.Step{ID: "s",
		Body:   labs.Text{"en": "Set the limit to `{{ .Values.cpu }}m`."},
		Checks: []labs.Check{{Name: labs.Text{"en": "quota"}, Probe: labs.Probe{Answer: &labs.AnswerProbe{}}, Expect: labs.Matcher{Equals: strp("{{ mul .Values.cpu 100 }}")}}},
	}
	lab.Steps = []labs.Step{step}
	mine, err := lab.For(labs.Values{"cpu": "200"})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := lab.For(labs.Values{"cpu": "300"})
	if err != nil {
		t.Fatal(err)
	}
	got := answerGuesses(mine, &mine.Steps[0], theirs, &theirs.Steps[0])
	for _, want := range []string{"200m", "30000", "300m"} {
		if !slices.Contains(got, want) {
			t.Errorf("guesses %q lack %q", got, want)
		}
	}
	// This session's own expected value is not in its texts: not guessed.
	if slices.Contains(got, "20000") {
		t.Errorf("guesses %q hold this session's answer, which no text shows", got)
	}
}

func strp(s string) *string { return &s }

func TestTypedNotRun(t *testing.T) {
	step := &labs.Step{Solve: []labs.Action{{Run: "crictl pods --name box\nprintf '#%s\\n%s\\n' x y >> /root/.bash_history"}}}
	got := typedNotRun(step)
	want := []string{"# crictl pods --name box", "echo 'crictl pods --name box'"}
	if !slices.Equal(got, want) {
		t.Errorf("typedNotRun = %q, want %q", got, want)
	}
}

func TestLeaks(t *testing.T) {
	res := []grader.Result{
		{Name: labs.Text{"en": "count"}, Words: labs.Text{"en": "4 values: 10.244.1.2 10.244.1.3 10.244.1.4 10.244.1.5", "zh": "4 个值：10.244.1.2 10.244.1.3 10.244.1.4 10.244.1.5"}},
		{Name: labs.Text{"en": "ip"}, Words: labs.Text{"en": "10.244.1.4", "zh": "10.244.1.4"}},
		{Name: labs.Text{"en": "hint"}, Feedback: labs.Text{"zh": "答案是 4。"}},
		// What the learner is not shown does not leak: the raw value.
		{Name: labs.Text{"en": "raw"}, Observed: "4 (a b c d)", Words: labs.Text{"en": "the Pods run", "zh": "Pod 在运行"}},
		// A reading in one language alone still shows it.
		{Name: labs.Text{"en": "reading"}, Words: labs.Text{"en": "the Pods run", "zh": "有 4 个 Pod 在运行"}},
	}
	got := leaks(res, "4")
	if len(got) != 4 || !strings.Contains(got[0], `"count"`) || !strings.Contains(got[0], "in en") || !strings.Contains(got[1], "in zh") ||
		!strings.Contains(got[2], "zh feedback") || !strings.Contains(got[3], `"reading"`) {
		t.Errorf("leaks of 4 = %q, want the count's words in both languages, the Chinese hint and the Chinese reading", got)
	}
	if got := leaks(res[:2], "10.244.1.3"); len(got) != 2 {
		t.Errorf("leaks of an IP listed in an observed text = %q", got)
	}
	if got := leaks(res, "7"); len(got) != 0 {
		t.Errorf("leaks of an answer shown nowhere = %q", got)
	}
}
