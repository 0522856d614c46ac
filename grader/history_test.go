package grader

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// What a learner could type to look as if they had run a command, and
// what they really run.
func TestHistoryCountsWhatRan(t *testing.T) {
	cases := []struct {
		line, re string
		counts   bool
	}{
		{"crictl inspectp abc", `crictl +inspectp`, true},
		{"  crictl   inspectp abc", `crictl +inspectp`, true},
		{"# crictl inspectp", `crictl +inspectp`, false},
		{"#crictl inspectp", `crictl +inspectp`, false},
		{"true # crictl inspectp", `crictl +inspectp`, false},
		{"echo runc list", `runc +.*(list|state)`, false},
		{"echo 'runc --root /run list'", `runc +.*(list|state)`, false},
		{`printf '%s\n' "crictl pods"`, `crictl +pods`, false},
		{`x="crictl pods"`, `crictl +pods`, false},
		{`export X="crictl pods"`, `crictl +pods`, false},
		{`cat <<< "crictl pods"`, `crictl +pods`, false},
		{`: crictl pods`, `crictl +pods`, false},
		{"echo $(crictl pods)", `crictl +pods`, true},
		{"crictl inspect abc | jq .info.runtimeSpec", `crictl +inspect .*(runtimeSpec|jq)`, true},
		{"k describe pod web", `kubectl +describe`, true},
		{"sudo crictl pods", `crictl +pods`, true},
		{"bash -c 'crictl pods'", `crictl +pods`, true},
		{"ls /proc/1/ns && readlink /proc/1/ns/net", `ls .*/proc/.*/ns|readlink .*/proc/.*/ns/`, true},
		{"crictl pods 'unterminated", `crictl +pods`, false},
	}
	for _, c := range cases {
		cmds := historyCommands(c.line+"\n", time.Time{})
		re := regexp.MustCompile(c.re)
		got := false
		for _, cmd := range cmds {
			got = got || re.MatchString(cmd)
		}
		if got != c.counts {
			t.Errorf("%q against %q: counted %v, want %v (commands %q)", c.line, c.re, got, c.counts, cmds)
		}
	}
}

func TestHistoryCountsOnlySince(t *testing.T) {
	step := time.Unix(1_800_000_000, 0)
	history := strings.Join([]string{
		fmt.Sprintf("#%d", step.Add(-time.Minute).Unix()),
		"crictl pods --before",
		"crictl pods --unstamped",
		fmt.Sprintf("#%d", step.Add(time.Second).Unix()),
		"crictl pods --after",
		"",
	}, "\n")
	got := strings.Join(historyCommands(history, step), ",")
	if got != "crictl pods --after" {
		t.Errorf("commands since the step: %q, want only the stamped one after it", got)
	}
	if got := historyCommands(history, time.Time{}); len(got) != 3 {
		t.Errorf("without a step start every command counts: %q", got)
	}
}
