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
	html, err := newMarkdown().render("它还会每 20 秒\n重新读一遍目录。\nkubelet 的 inotify\nwatch", store.ModeGuided, "zh", false)
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

// A Killercoda scenario's raw HTML is kept (its <details> hints), and
// still sanitized: a scenario file cannot put a script or an event
// handler into the lab page. podpath's own labs keep raw HTML out.
func TestScenarioHTMLIsSanitized(t *testing.T) {
	src := "<details>\n<summary>Solution</summary>\n\n`kubectl get pods`\n\n</details>\n\n<script>alert(1)</script>\n\n<img src=\"x.png\" onerror=\"alert(2)\">\n"
	html, err := newMarkdown().render(src, store.ModeGuided, "en", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<details>", "<summary>Solution</summary>", "<code>kubectl get pods</code>", `<img src="x.png">`} {
		if !strings.Contains(html, want) {
			t.Errorf("raw HTML kept: want %q in\n%s", want, html)
		}
	}
	for _, bad := range []string{"<script", "alert(", "onerror"} {
		if strings.Contains(html, bad) {
			t.Errorf("%q got through:\n%s", bad, html)
		}
	}
	own, _ := newMarkdown().render(src, store.ModeGuided, "en", false)
	if strings.Contains(own, "<details>") {
		t.Errorf("podpath's own labs keep raw HTML out:\n%s", own)
	}
}
