package workshops

import (
	"strings"
	"testing"
)

// A new code has CodeLength characters of the alphabet, reads back from
// its display form however it is typed, and codes do not repeat.
func TestCodes(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		c := NewCode()
		if len(c) != CodeLength || strings.Trim(c, CodeAlphabet) != "" {
			t.Fatalf("code %q: want %d characters of %s", c, CodeLength, CodeAlphabet)
		}
		if seen[c] {
			t.Fatalf("code %q drawn twice in 1000", c)
		}
		seen[c] = true
		shown := DisplayCode(c)
		if shown != c[:5]+"-"+c[5:] {
			t.Errorf("code %q shown as %q", c, shown)
		}
		for _, typed := range []string{shown, strings.ToLower(shown), " " + c[:5] + " " + c[5:] + "\t"} {
			if got := NormalizeCode(typed); got != c {
				t.Errorf("%q typed as %q reads as %q", c, typed, got)
			}
		}
	}
	if DisplayCode("ABCDEF") != "ABCDEF" {
		t.Error("an older six-character code is not shown as it is")
	}
	for _, r := range "0O1Il" {
		if strings.ContainsRune(CodeAlphabet, r) {
			t.Errorf("the alphabet has %q, which reads like another character", r)
		}
	}
}
