package labs

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// fencedBlocks returns the fenced code blocks of a Markdown text, fences included.
func fencedBlocks(md string) []string {
	var blocks []string
	var cur []string
	in := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			cur = append(cur, line)
			if in {
				blocks = append(blocks, strings.Join(cur, "\n"))
				cur = nil
			}
			in = !in
			continue
		}
		if in {
			cur = append(cur, line)
		}
	}
	return blocks
}

var templateAction = regexp.MustCompile(`\{\{.*?\}\}`)

func TestFencedBlocks(t *testing.T) {
	md := "text\n```bash node01\ncrictl ps\n```\nmore\n```\nb\n```\n"
	got := fencedBlocks(md)
	want := []string{"```bash node01\ncrictl ps\n```", "```\nb\n```"}
	if !slices.Equal(got, want) {
		t.Errorf("fencedBlocks = %q, want %q", got, want)
	}
}

// A translation changes the prose only: the learner copies and runs the
// code blocks, so the Chinese text must hold the English text's blocks,
// byte for byte and in order, and the same template actions.
func TestBuiltinTranslationsKeepCode(t *testing.T) {
	all, ps := Builtin()
	if len(ps) > 0 {
		t.Fatalf("built-in labs have problems:\n%v", ps)
	}
	blocks := 0
	for _, l := range all {
		texts := map[string]Text{"intro": l.Intro}
		for _, s := range l.Steps {
			texts["steps/"+s.ID] = s.Body
		}
		for name, text := range texts {
			en, zh := fencedBlocks(text["en"]), fencedBlocks(text["zh"])
			blocks += len(en)
			if !slices.Equal(en, zh) {
				t.Errorf("%s/%s: the Chinese text's code blocks differ from the English text's:\nen: %q\nzh: %q", l.ID, name, en, zh)
			}
			if a, b := templateAction.FindAllString(text["en"], -1), templateAction.FindAllString(text["zh"], -1); !slices.Equal(a, b) {
				t.Errorf("%s/%s: template actions differ: en %q, zh %q", l.ID, name, a, b)
			}
		}
	}
	if blocks == 0 {
		t.Fatal("found no code block in the built-in labs; fencedBlocks is broken")
	}
}
