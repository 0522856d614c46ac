package labs

import (
	"os/exec"
	"strings"
	"testing"
	"unicode"
)

// A script check's feedback is its FAIL: lines, and the Chinese page shows
// its FAIL[zh]: lines instead (docs/LABS.md). A built-in script that prints
// an English FAIL: line without a Chinese twin leaves the Chinese page with
// English, or with only some of its reasons.

// failZhProblems says what a script lacks for its Chinese feedback: fewer
// FAIL[zh]: lines than FAIL: lines, or a FAIL[zh]: line with no Chinese in it.
func failZhProblems(script string) []string {
	var out []string
	en, zh := strings.Count(script, "FAIL:"), strings.Count(script, "FAIL[zh]:")
	if zh < en {
		out = append(out, "has "+itoa(en)+" FAIL: lines but only "+itoa(zh)+" FAIL[zh]: lines")
	}
	for _, line := range strings.Split(script, "\n") {
		// What follows each FAIL[zh]: on the line, up to the next FAIL.
		for _, text := range strings.Split(line, "FAIL[zh]:")[1:] {
			if i := strings.Index(text, "FAIL"); i >= 0 {
				text = text[:i]
			}
			if !strings.ContainsFunc(text, func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
				out = append(out, "FAIL[zh]:"+text+" has no Chinese in it")
			}
		}
	}
	return out
}

func TestFailZhProblems(t *testing.T) {
	for _, c := range []struct {
		script string
		ok     bool
	}{
		{`[ -n "$x" ] || { echo "FAIL: no x"; echo "FAIL[zh]: 没有 x"; exit 1; }`, true},
		{"echo \"FAIL: $n left\"\necho \"FAIL[zh]: 还剩 $n 个\"\nexit 1", true},
		{"echo \"FAIL: $(basename \"$f\") is taken\"\necho \"FAIL[zh]: $(basename \"$f\") 已被占用\"", true},
		{"exit 0", true},
		{`[ -n "$x" ] || { echo "FAIL: no x"; exit 1; }`, false},
		{`echo "FAIL: a"; echo "FAIL[zh]: 甲"; echo "FAIL: b"; exit 1`, false},
		{`echo "FAIL: no x"; echo "FAIL[zh]: no x"; exit 1`, false},
	} {
		if got := failZhProblems(c.script); (len(got) == 0) != c.ok {
			t.Errorf("failZhProblems(%q) = %q, want ok=%v", c.script, got, c.ok)
		}
	}
}

// scriptChecks calls fn for every script probe of the built-in labs' checks,
// however deeply allOf, anyOf and not nest it, filled with the labs' sample
// values.
func scriptChecks(t *testing.T, fn func(where string, s *ScriptProbe)) {
	t.Helper()
	all, problems := Builtin()
	if len(problems) > 0 {
		t.Fatalf("built-in labs: %v", problems)
	}
	for _, l := range all {
		filled, err := l.For(l.SampleValues())
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range filled.Steps {
			for i := range st.Checks {
				for j, c := range st.Checks[i].Conditions() {
					if s := c.Probe.Script; s != nil {
						fn(l.ID+" step "+st.ID+" check "+itoa(i+1)+" condition "+itoa(j+1), s)
					}
				}
			}
		}
	}
}

func TestBuiltinScriptsFailInChinese(t *testing.T) {
	withFail := 0
	scriptChecks(t, func(where string, s *ScriptProbe) {
		if strings.Contains(s.Script, "FAIL:") {
			withFail++
		}
		for _, p := range failZhProblems(s.Script) {
			t.Errorf("%s: %s", where, p)
		}
	})
	if withFail == 0 {
		t.Fatal("no built-in script check prints FAIL: lines; the test reads nothing")
	}
}

// TestBuiltinScriptsParse runs bash -n over every built-in script check, so
// a quote in its feedback that ends the echo early fails here and not on a
// learner's cluster.
func TestBuiltinScriptsParse(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	n := 0
	scriptChecks(t, func(where string, s *ScriptProbe) {
		n++
		cmd := exec.Command(bash, "-n")
		cmd.Stdin = strings.NewReader(s.Script)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: bash -n: %v\n%s", where, err, out)
		}
	})
	if n == 0 {
		t.Fatal("no built-in script checks")
	}
}
