package server

import (
	"encoding/json"
	"html/template"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/progress"
	"github.com/podpath/podpath/store"
)

func testLab(id string, order int, steps ...string) *labs.Lab {
	l := &labs.Lab{ID: id, Order: order, Title: labs.Text{"en": "Lab " + id, "zh": "实验 " + id}, Summary: labs.Text{"en": "About " + id}}
	for _, s := range steps {
		l.Steps = append(l.Steps, labs.Step{ID: s, Title: labs.Text{"en": "Step " + s, "zh": "第 " + s + " 步"}, Layers: []string{"kubelet"}})
	}
	return l
}

func ids(steps []StepBase) string {
	var out []string
	for _, s := range steps {
		out = append(out, s.ID)
	}
	return strings.Join(out, ",")
}

// The end of a lab: nothing while a step is to do or failed; then the steps
// passed and skipped, in the lab's order, the time from the session's start
// to the last attempt, the takeaways in the page's language, and the lab of
// the next order.
func TestLabSummary(t *testing.T) {
	l := testLab("one", 1, "a", "b", "c", "d")
	l.Takeaways = labs.Text{"en": "First thing.\n\n  Second thing.  \n", "zh": "第一点。\n第二点。"}
	catalog := []*labs.Lab{
		testLab("later", 7, "x"), // an operator's lab further down the track
		l,
		testLab("same-order", 1, "x"),
		testLab("two-b", 2, "x"),
		testLab("two-a", 2, "x"), // the first id of the next order
	}
	started := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	at := func(min int) time.Time { return started.Add(time.Duration(min) * time.Minute) }
	statuses := map[string]store.StepStatus{
		"a": {StepID: "a", Status: store.StepPassed, UpdatedAt: at(5)},
		"b": {StepID: "b", Status: store.StepSkipped, UpdatedAt: at(31)},
		"c": {StepID: "c", Status: store.StepPassed, UpdatedAt: at(12)},
	}
	if s := labSummary(l, catalog, progress.FromStatuses(statuses), started, "en"); s != nil {
		t.Fatalf("a summary with step d to do: %+v", s)
	}
	statuses["d"] = store.StepStatus{StepID: "d", Status: store.StepFailed, UpdatedAt: at(20)}
	if s := labSummary(l, catalog, progress.FromStatuses(statuses), started, "en"); s != nil {
		t.Fatalf("a summary with step d failed: %+v", s)
	}
	statuses["d"] = store.StepStatus{StepID: "d", Status: store.StepSkipped, UpdatedAt: at(24)}
	s := labSummary(l, catalog, progress.FromStatuses(statuses), started, "en")
	if s == nil {
		t.Fatal("no summary once every step is passed or skipped")
	}
	if ids(s.Passed) != "a,c" || ids(s.Skipped) != "b,d" {
		t.Errorf("passed %s, skipped %s; want a,c and b,d", ids(s.Passed), ids(s.Skipped))
	}
	if s.Skipped[1].Title != "Step d" {
		t.Errorf("skipped step title %q", s.Skipped[1].Title)
	}
	// The last attempt was b's, at minute 31, though b comes before d.
	if !s.FinishedAt.Equal(at(31)) || s.DurationMS != (31*time.Minute).Milliseconds() {
		t.Errorf("finished %s after %d ms; want minute 31", s.FinishedAt, s.DurationMS)
	}
	if strings.Join(s.Takeaways, "|") != "First thing.|Second thing." {
		t.Errorf("takeaways %q", s.Takeaways)
	}
	if s.Next == nil || s.Next.ID != "two-a" || s.Next.Order != 2 || s.Next.Title != "Lab two-a" {
		t.Errorf("next lab %+v, want two-a (order 2, first id)", s.Next)
	}

	zh := labSummary(l, catalog, progress.FromStatuses(statuses), started, "zh")
	if strings.Join(zh.Takeaways, "|") != "第一点。|第二点。" || zh.Passed[0].Title != "第 a 步" || zh.Next.Title != "实验 two-a" {
		t.Errorf("Chinese summary: %+v", zh)
	}

	// The track's last lab has no next one; a lab with no takeaways has none.
	last := testLab("last", 7, "a")
	last.Order = 9
	s = labSummary(last, append(catalog, last), progress.FromStatuses(map[string]store.StepStatus{"a": {Status: store.StepPassed, UpdatedAt: at(3)}}), started, "en")
	if s == nil || s.Next != nil || len(s.Takeaways) != 0 || s.Takeaways == nil || ids(s.Passed) != "a" || len(s.Skipped) != 0 {
		t.Errorf("summary of the last lab: %+v", s)
	}
	if n := progress.Next(catalog[0], catalog); n != nil {
		t.Errorf("after order 7 comes %s", n.ID)
	}
}

const stepMarkdown = "## Look\n\nRun `crictl ps` first:\n\n```bash node01\ncrictl ps --name nginx\necho '<b>'\n```\n\nThe file:\n\n```yaml\nkind: Pod\n```\n\nThen:\n\n```bash controlplane\nkubectl get pods\n```\n"

var (
	preTag     = regexp.MustCompile(`<pre[^>]*>`)
	commandPre = regexp.MustCompile(`<pre[^>]*><code class="language-bash">`)
)

// Guided mode marks every command runnable; challenge mode marks none and
// puts each command (and only commands) behind a closed "show me".
func TestStepMarkdownByMode(t *testing.T) {
	m := newMarkdown()
	guided, err := m.render(stepMarkdown, store.ModeGuided, "en", false)
	if err != nil {
		t.Fatal(err)
	}
	challenge, err := m.render(stepMarkdown, store.ModeChallenge, "en", false)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(preTag.FindAllString(guided, -1)); n != 3 {
		t.Fatalf("guided: %d code blocks, want 3:\n%s", n, guided)
	}
	for _, pre := range commandPre.FindAllString(guided, -1) {
		if !strings.Contains(pre, `data-run="true"`) {
			t.Errorf("guided command without data-run: %s", pre)
		}
	}
	if n := strings.Count(guided, `data-run="true"`); n != 2 {
		t.Errorf("guided: %d runnable blocks, want the 2 commands:\n%s", n, guided)
	}
	if strings.Contains(guided, "<details") {
		t.Errorf("guided mode hides something:\n%s", guided)
	}
	if !strings.Contains(guided, `<pre data-node="node01" data-run="true">`) {
		t.Errorf("guided: the node01 command lost its node:\n%s", guided)
	}

	if strings.Contains(challenge, "data-run") {
		t.Errorf("challenge mode has a runnable block:\n%s", challenge)
	}
	hidden := regexp.MustCompile(`<details class="show-me"><summary>Show me</summary><pre data-node="(\w+)"><code class="language-bash">([^<]*)</code></pre></details>`).FindAllStringSubmatch(challenge, -1)
	if len(hidden) != 2 || hidden[0][1] != "node01" || hidden[1][1] != "controlplane" {
		t.Fatalf("challenge: commands behind show me %q, want node01's and controlplane's:\n%s", hidden, challenge)
	}
	if !strings.Contains(hidden[0][2], "crictl ps --name nginx") || !strings.Contains(hidden[0][2], "&#39;&lt;b&gt;&#39;") {
		t.Errorf("the hidden command's text: %q", hidden[0][2])
	}
	if strings.Contains(challenge, "<details open") || strings.Contains(challenge, "<details class=\"show-me\" open") {
		t.Errorf("a show-me starts open:\n%s", challenge)
	}
	if yaml := strings.Index(challenge, `<code class="language-yaml">`); yaml < 0 || strings.LastIndex(challenge[:yaml], "<details") > strings.LastIndex(challenge[:yaml], "</details>") {
		t.Errorf("challenge: the YAML block (not a command) is hidden or gone:\n%s", challenge)
	}
	// Inline code and prose are the same in both modes.
	if !strings.Contains(challenge, "<code>crictl ps</code>") {
		t.Errorf("challenge: inline code changed:\n%s", challenge)
	}

	zh, err := m.render(stepMarkdown, store.ModeChallenge, "zh", false)
	if err != nil {
		t.Fatal(err)
	}
	if want := "<summary>" + translate("showme", "zh") + "</summary>"; strings.Count(zh, want) != 2 || translate("showme", "zh") == translate("showme", "en") {
		t.Errorf("Chinese show-me label missing:\n%s", zh)
	}
	// A page in a language with no renderer of its own falls back to English.
	if fr, err := m.render(stepMarkdown, store.ModeChallenge, "fr", false); err != nil || fr != challenge {
		t.Errorf("fallback render: %v\n%s", err, fr)
	}
}

// A start takes guided (also when it says nothing) or challenge; anything
// else is a 400 that names both.
func TestCheckMode(t *testing.T) {
	for in, want := range map[string]string{"": store.ModeGuided, "guided": store.ModeGuided, "challenge": store.ModeChallenge} {
		if got, err := checkMode(in); err != nil || got != want {
			t.Errorf("checkMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"Challenge", "expert", " guided", strings.Repeat("x", 500)} {
		_, err := checkMode(bad)
		e, ok := err.(*errs.Error)
		if !ok || statusOfKind(e.Kind) != 400 || !strings.Contains(e.Message, `"guided"`) || !strings.Contains(e.Message, `"challenge"`) || len(e.Message) > 300 {
			t.Errorf("checkMode(%.20q): %v", bad, err)
		}
	}
}

// Every page word has an English and a Chinese text.
func TestMessagesInBothLanguages(t *testing.T) {
	for _, lg := range labs.Languages {
		for key := range messages["en"] {
			if strings.HasSuffix(key, "_one") {
				continue // an English singular (see plural and TestMessageCatalogBothLanguages)
			}
			if messages[lg][key] == "" {
				t.Errorf("message %q has no %s text", key, lg)
			}
		}
		for key := range messages[lg] {
			if _, ok := messages["en"][key]; !ok {
				t.Errorf("message %q is in %s only", key, lg)
			}
		}
	}
}

// The lab page says which mode the session is in and carries the next lab's
// Start (a form that ends this session), but not the takeaways: they come
// with the summary, once the steps are done. The home page shows the active
// session's mode and offers both modes at Start.
func TestPagesShowModeAndNextLab(t *testing.T) {
	p, err := newPages()
	if err != nil {
		t.Fatal(err)
	}
	all, ps := labs.Builtin()
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	first := all[0]
	next := labView(progress.Next(first, all), "en")
	if next.ID != all[1].ID {
		t.Fatalf("next of %s is %s", first.ID, next.ID)
	}
	exec := func(name string, data map[string]any) string {
		t.Helper()
		var b strings.Builder
		data["Lang"], data["CSRF"] = "en", "tok"
		if err := p.t[name].ExecuteTemplate(&b, "layout", data); err != nil {
			t.Fatalf("%s page: %v", name, err)
		}
		return b.String()
	}
	sess := &store.LabSession{LabID: first.ID, Mode: store.ModeChallenge}
	page := exec("session", map[string]any{"Session": sess, "Lab": labView(first, "en"), "Next": &next})
	for _, want := range []string{
		`data-mode="challenge"`, `>Challenge</span>`,
		`<form method="post" action="/labs/` + next.ID + `/start"`, `name="replace" value="1"`, `name="mode" value="challenge"`, next.Title,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the lab page has no %s", want)
		}
	}
	for _, line := range first.Takeaways.Lines("en") {
		if strings.Contains(page, line) || strings.Contains(page, template.HTMLEscapeString(line)) {
			t.Errorf("the lab page gives the takeaways away before the end: %q", line)
		}
	}
	// The page's words for lab.js are JSON, with the end's templates in it.
	i18n := page[strings.Index(page, `<script id="i18n" type="application/json">`)+len(`<script id="i18n" type="application/json">`):]
	var words map[string]string
	if err := json.Unmarshal([]byte(i18n[:strings.Index(i18n, "</script>")]), &words); err != nil {
		t.Fatalf("the page's i18n block: %v", err)
	}
	if words["endcount"] != translate("endcount", "en") || !strings.Contains(words["endcount"], "{skipped}") || words["endtime"] == "" || words["skipped"] == "" {
		t.Errorf("the page's words for the lab's end: %v", words)
	}
	last := exec("session", map[string]any{"Session": &store.LabSession{LabID: first.ID, Mode: store.ModeGuided}, "Lab": labView(first, "en"), "Next": (*LabView)(nil)})
	if !strings.Contains(last, translate("lastlab", "en")) || strings.Contains(last, "/start\"") || !strings.Contains(last, `data-mode="guided"`) {
		t.Errorf("the last lab's page: no last-lab note, or a start form, or no guided mode")
	}

	var cards []labCard
	for _, l := range all {
		cards = append(cards, labCard{Lab: labView(l, "en"), Active: l.ID == first.ID})
	}
	home := exec("home", map[string]any{"Labs": cards, "Active": sess, "User": &store.User{Name: "Lin"}})
	if !strings.Contains(home, `<span class="pill mode" data-mode="challenge">Challenge</span>`) {
		t.Error("the home page does not show the active session's mode")
	}
	if n := strings.Count(home, `name="mode" value="challenge"`); n != len(all)-1 {
		t.Errorf("%d challenge starts on the home page, want one per lab not active (%d)", n, len(all)-1)
	}
}
