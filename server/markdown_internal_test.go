package server

import (
	"strings"
	"testing"

	"github.com/podpath/podpath/store"
)

// The labs' Chinese texts are hard-wrapped: a line break between two
// Chinese characters renders as nothing (a space there reads as a gap in
// the sentence), while one between Latin words stays a space. (Before
// inline code at a line's start goldmark drops it too: write the code on
// the line of the Chinese before it.)
func TestChineseLineBreaks(t *testing.T) {
	html, err := newMarkdown().render("它还会每 20 秒\n重新读一遍目录。\nkubelet 的 inotify\nwatch", store.ModeGuided, "zh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html, "每 20 秒重新读一遍目录") {
		t.Errorf("a break between two Chinese characters shows:\n%s", html)
	}
	if !strings.Contains(html, "inotify\nwatch") && !strings.Contains(html, "inotify watch") {
		t.Errorf("a break between two Latin words went:\n%s", html)
	}
}
