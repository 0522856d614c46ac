package labtest

import (
	"slices"
	"testing"

	"github.com/podpath/podpath/labs"
)

func TestAnswerGuessesTakeWhatTheTextsShow(t *testing.T) {
	lab := &labs.Lab{Summary: labs.Text{"en": "Services get `10.96.0.10` for DNS."}}
	step := &labs.Step{
		Body:   labs.Text{"en": "The quota is `cpu.cfs_quota_us`: read it.", "zh": "读取 25000 这个值"},
		Checks: []labs.Check{{Name: labs.Text{"en": "exit code"}, Hints: []labs.Text{{"en": "128+9 is 137"}}}},
	}
	got := answerGuesses(lab, step)
	for _, want := range []string{"", "10.96.0.10", "cpu.cfs_quota_us", "25000", "137", "128+9"} {
		if !slices.Contains(got, want) {
			t.Errorf("guesses %q lack %q", got, want)
		}
	}
	if got[1] != "10.96.0.10" {
		t.Errorf("code spans go first, got %q", got[:3])
	}
}

func TestTypedNotRun(t *testing.T) {
	step := &labs.Step{Solve: []labs.Action{{Run: "crictl pods --name box\nprintf '#%s\\n%s\\n' x y >> /root/.bash_history"}}}
	got := typedNotRun(step)
	want := []string{"# crictl pods --name box", "echo 'crictl pods --name box'"}
	if !slices.Equal(got, want) {
		t.Errorf("typedNotRun = %q, want %q", got, want)
	}
}
