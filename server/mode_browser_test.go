package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/podpath/podpath/internal/browser"
	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/server"
	"github.com/podpath/podpath/store"
)

// TestChallengeModeInBrowser starts lab 1 in challenge mode from the labs
// page in a real headless Chromium, and reads the lab page: the mode is
// shown, no command has a run button, each is behind a closed "show me"
// that a click opens, and Skip is still there. Then, with every step passed
// or skipped (recorded in the store), the lab's end lists which, the time,
// the takeaways, and starts the next lab in challenge mode. The sandbox is
// a fake: no cluster.
func TestChallengeModeInBrowser(t *testing.T) {
	if _, err := browser.Path(); err != nil {
		testenv.Missing(t, "Chromium (apt-get install -y chromium)")
	}
	e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
	ctx, cancel, err := browser.New(context.Background(), 1366, 820)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	ctx, stop := context.WithTimeout(ctx, 3*time.Minute)
	defer stop()
	eval := func(expr string) bool {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}

	do(ctx, t,
		chromedp.Navigate(e.url+"/signup"),
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), "challenger@example.com"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), "a good password"),
		chromedp.Submit(chromedp.CSS(`input[name=password]`)),
		chromedp.WaitVisible(chromedp.CSS(`.lab-card[data-lab="yaml-to-process"] button.start-challenge`)),
		chromedp.Click(chromedp.CSS(`.lab-card[data-lab="yaml-to-process"] button.start-challenge`)),
	)
	poll(ctx, t, "the lab page", `location.pathname.startsWith("/sessions/")`, 30*time.Second)
	path, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`))
	id, err := uuid.Parse(strings.TrimPrefix(path, "/sessions/"))
	if err != nil {
		t.Fatalf("lab page %s: %v", path, err)
	}
	if sess, err := e.store.LabSession(context.Background(), id); err != nil || sess.Mode != store.ModeChallenge {
		t.Fatalf("the session started from the challenge button: %+v %v", sess, err)
	}

	poll(ctx, t, "the first step's text", `document.querySelectorAll("#step-body details.show-me").length > 0`, 30*time.Second)
	if !eval(`document.querySelector("#mode").dataset.mode === "challenge" && document.querySelector("#mode").textContent === "Challenge"`) {
		t.Error("the lab page does not say it is in challenge mode")
	}
	if eval(`document.querySelectorAll(".code-run").length > 0`) {
		t.Error("challenge mode has run-in-terminal buttons")
	}
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#step-body pre")].filter((p) => !(p.closest("details.show-me") && !p.closest("details").open && !p.checkVisibility())).map((p) => p.outerHTML).join("\n")`))
	if err != nil || shown != "" {
		t.Errorf("a command of the step is visible before show me is clicked (%v):\n%s", err, shown)
	}
	if !eval(`(document.querySelector("#step-body details.show-me summary").click(), true)`) {
		t.Fatal("no show me to click")
	}
	poll(ctx, t, "the command shown", `document.querySelector("#step-body details.show-me").open && document.querySelector("#step-body details.show-me pre").checkVisibility()`, 5*time.Second)
	if !eval(`document.querySelector("#step-body details.show-me pre").textContent.includes("ls /etc/kubernetes/manifests") && document.querySelector("#step-body details.show-me pre .code-copy") !== null`) {
		t.Error("the command behind show me is not the step's, or has no copy button")
	}
	if eval(`document.querySelector("#skip-btn").hidden`) {
		t.Error("challenge mode hides Skip")
	}
	shot(ctx, t, "challenge")

	// The path diagram points at no layer before the step is passed, and a
	// failed check's hint waits behind a closed "Show a hint". (The fake's
	// commands print nothing and exit 0, so the scheduler's manifest
	// "exists" and the first check fails with its first hint.)
	if eval(`document.querySelectorAll(".layer.on").length > 0`) {
		t.Error("the path diagram lights a layer of a pending challenge step")
	}
	do(ctx, t, chromedp.Click(chromedp.CSS(`#check-btn`)))
	poll(ctx, t, "the check's result", `document.querySelectorAll("#results li.result.failed").length > 0 && !document.querySelector("#check-btn").disabled`, 2*time.Minute)
	if !eval(`(() => { const d = document.querySelector("#results details.hint"); return d !== null && !d.open && d.querySelector("summary").textContent === "Show a hint" && !d.querySelector(".feedback").checkVisibility(); })()`) {
		html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#results").outerHTML`))
		t.Errorf("a failed check's hint is not behind a closed Show a hint:\n%s", html)
	}
	if eval(`[...document.querySelectorAll("#results details.hint .feedback")].some((f) => f.checkVisibility())`) {
		t.Error("a hint shows before it is asked for")
	}
	shot(ctx, t, "challenge-hint-closed")
	if !eval(`(document.querySelector("#results details.hint summary").click(), true)`) {
		t.Fatal("no Show a hint to click")
	}
	poll(ctx, t, "the hint shown", `document.querySelector("#results details.hint .feedback").checkVisibility() && document.querySelector("#results details.hint .feedback").textContent.length > 20`, 5*time.Second)

	// The end of the lab: three steps passed, three skipped.
	all, _ := labs.Builtin()
	lab := labs.Find(all, "yaml-to-process")
	skipped := map[string]bool{"apply": true, "etcd": true, "process": true}
	for _, st := range lab.Steps {
		kind := store.AttemptCheck
		if skipped[st.ID] {
			kind = store.AttemptSkip
		}
		if err := e.store.RecordAttempt(context.Background(), &store.Attempt{LabSessionID: id, StepID: st.ID, Kind: kind, Passed: true, Duration: time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	do(ctx, t, chromedp.Navigate(e.url+path))
	poll(ctx, t, "the lab's end", `!document.querySelector("#lab-end").hidden && document.querySelectorAll("#end-steps li").length === 6`, 30*time.Second)
	end, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#lab-end`)))
	if !strings.Contains(end, "3 of 6 steps passed, 3 skipped") || !strings.Contains(end, "Time taken: ") || strings.Contains(end, "Well done") {
		t.Errorf("the lab's end: %q", end)
	}
	got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#end-steps li.skipped")].map((li) => li.dataset.step).join(",")`))
	if got != "apply,etcd,process" {
		t.Errorf("skipped at the lab's end: %q, want apply,etcd,process", got)
	}
	for _, line := range lab.Takeaways.Lines("en") {
		if !strings.Contains(end, line) {
			t.Errorf("the lab's end lacks the takeaway %q", line)
		}
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#end-takeaways li").length`)); n != len(lab.Takeaways.Lines("en")) {
		t.Errorf("%d takeaways shown, want %d", n, len(lab.Takeaways.Lines("en")))
	}
	if !strings.Contains(end, "2. "+labs.Find(all, "scheduler").Title.In("en")) {
		t.Errorf("the lab's end does not name lab 2: %q", end)
	}
	shot(ctx, t, "challenge-end")

	// Its Start ends this session and starts lab 2, here in challenge mode.
	if !eval(`(document.querySelector("#next-form button.start-challenge").click(), true)`) {
		t.Fatal("no challenge Start for the next lab")
	}
	poll(ctx, t, "lab 2's page", fmt.Sprintf(`location.pathname.startsWith("/sessions/") && location.pathname !== %q && document.querySelector("#mode") !== null`, path), 30*time.Second)
	if !eval(`document.querySelector("#mode").dataset.mode === "challenge"`) {
		t.Error("lab 2 did not start in challenge mode")
	}
	if old, err := e.store.LabSession(context.Background(), id); err != nil || old.State != store.SessionEnded {
		t.Errorf("lab 1's session after starting lab 2: %+v %v", old, err)
	}
	if active, err := e.store.ActiveLabSession(context.Background(), mustUser(t, e, "challenger@example.com")); err != nil || active.LabID != "scheduler" || active.Mode != store.ModeChallenge {
		t.Errorf("the active session: %+v %v", active, err)
	}
}

func mustUser(t *testing.T, e *env, email string) int64 {
	t.Helper()
	u, err := e.store.UserByEmail(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	return u.ID
}

// TestChallengeLabInBrowser opens a troubleshooting challenge as a learner
// in a real headless Chromium: its card offers only the challenge Start,
// the session is a challenge whatever the form says, and the step's text
// has no command at all (no block to run, none behind "show me"). Then
// every built-in challenge's steps, as the API renders them, have none
// either. The sandbox is a fake: no cluster.
func TestChallengeLabInBrowser(t *testing.T) {
	ctx := newBrowser(t, 1366, 820, 3*time.Minute)
	e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
	eval := func(expr string) bool { t.Helper(); return evalBool(ctx, t, expr) }
	const card = `.lab-card[data-lab="node-not-ready"]`
	do(ctx, t,
		chromedp.Navigate(e.url+"/signup"),
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), "troubleshooter@example.com"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), "a good password"),
		chromedp.Submit(chromedp.CSS(`input[name=password]`)),
		chromedp.WaitVisible(chromedp.CSS(card+` button.start-challenge`)),
	)
	if eval(`document.querySelector('` + card + ` button[value="guided"]') !== null`) {
		t.Error("a challenge's card offers the guided Start")
	}
	do(ctx, t, chromedp.Click(chromedp.CSS(card+` button.start-challenge`)))
	poll(ctx, t, "the lab page", `location.pathname.startsWith("/sessions/")`, 30*time.Second)
	path, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`))
	id, err := uuid.Parse(strings.TrimPrefix(path, "/sessions/"))
	if err != nil {
		t.Fatalf("lab page %s: %v", path, err)
	}
	if sess, err := e.store.LabSession(context.Background(), id); err != nil || sess.Mode != store.ModeChallenge || sess.LabID != "node-not-ready" {
		t.Fatalf("the session the challenge's Start made: %+v %v", sess, err)
	}
	poll(ctx, t, "the step's text", `document.querySelector("#step-body") && document.querySelector("#step-body").textContent.trim().length > 40`, 30*time.Second)
	if eval(`document.querySelectorAll("#step-body pre code.language-bash, #step-body details.show-me, .code-run").length > 0`) {
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#step-body").innerHTML`))
		t.Errorf("the challenge's step text has a command:\n%s", body)
	}
	if !eval(`document.querySelector("#mode").dataset.mode === "challenge"`) {
		t.Error("the lab page does not say it is a challenge")
	}
	shot(ctx, t, "troubleshooting-challenge")

	// Every challenge's steps, rendered for a session in challenge mode.
	all, _ := labs.Builtin()
	n := 0
	for _, l := range all {
		if !l.Challenge {
			continue
		}
		n++
		for _, st := range l.Steps {
			for _, lg := range labs.Languages {
				html, err := server.RenderStepForTest(l, st.ID, lg)
				if err != nil {
					t.Fatalf("%s/%s (%s): %v", l.ID, st.ID, lg, err)
				}
				if strings.Contains(html, "show-me") || strings.Contains(html, "language-bash") || strings.Contains(html, "code-run") {
					t.Errorf("%s step %s (%s) has a command:\n%s", l.ID, st.ID, lg, html)
				}
			}
		}
	}
	if n < 6 {
		t.Errorf("%d built-in challenges, want at least six", n)
	}
}
