package server_test

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/podpath/podpath/internal/browser"
	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/sandbox"
)

// TestPagesUnderCSP loads the pages in a real headless Chromium under the
// Content-Security-Policy and fails on anything the policy blocks: the sign-up
// form, the labs, and a lab page with its terminals (xterm.js writes its own
// styles). The session is made in the store and marked ready with made-up
// nodes; no cluster exists, so the terminals only show that they could not
// attach, which is all this test needs.
func TestPagesUnderCSP(t *testing.T) {
	if _, err := browser.Path(); err != nil {
		testenv.Missing(t, "Chromium (apt-get install -y chromium)")
	}
	e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
	ctx, cancel, err := browser.New(context.Background(), 1200, 800)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	ctx, stop := context.WithTimeout(ctx, 3*time.Minute)
	defer stop()
	var mu sync.Mutex
	var blocked []string
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			if strings.Contains(m.Text, "Content Security Policy") {
				mu.Lock()
				blocked = append(blocked, m.Text)
				mu.Unlock()
			}
		}
	}()
	time.Sleep(200 * time.Millisecond) // Console subscribes when it starts

	do(ctx, t,
		chromedp.Navigate(e.url+"/signup"),
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), "csp@example.com"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), "a good password"),
		chromedp.Submit(chromedp.CSS(`input[name=password]`)),
		chromedp.WaitVisible(chromedp.CSS(`.lab-card button.start`)),
	)
	u, err := e.store.UserByEmail(context.Background(), "csp@example.com")
	if err != nil {
		t.Fatal(err)
	}
	sess := e.labSession(t, u.ID, "yaml-to-process")
	sb, err := e.store.SandboxOf(context.Background(), sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	nodes := []sandbox.Node{{Alias: "controlplane", Container: "no-such-container", Role: "control-plane", State: "running"}}
	if err := e.store.SetSandboxNodes(context.Background(), sb.Name, nodes); err != nil {
		t.Fatal(err)
	}
	if err := e.store.SetSandboxState(context.Background(), sb.Name, "ready", nil); err != nil {
		t.Fatal(err)
	}
	// What the clock shows the moment the page marks the session ready
	// (a MutationObserver's callback runs right after the script's task):
	// the time left, not a placeholder for a second.
	watchTimer := func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
document.addEventListener("DOMContentLoaded", () => {
  const lab = document.querySelector("#lab");
  if (!lab) return;
  new MutationObserver(() => {
    if (lab.dataset.state === "ready" && window.timerAtReady === undefined) window.timerAtReady = document.getElementById("timer").textContent;
  }).observe(lab, { attributes: true, attributeFilter: ["data-state"] });
});`})
		return chromedp.Void{}, err
	}
	do(ctx, t, watchTimer, chromedp.Navigate(e.url+"/sessions/"+sess.ID.String()))
	// lab.js ran (the event stream's first event set the state) and xterm.js
	// drew a terminal.
	poll(ctx, t, "the lab page's scripts", `document.querySelector("#lab").dataset.state === "ready" && typeof Terminal === "function" && document.querySelector(".term .xterm") !== null`, time.Minute)
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`String(window.timerAtReady)`)); err != nil || !regexp.MustCompile(`^(\d+:)?\d+:\d\d$`).MatchString(got) {
		t.Errorf("the lab page's clock when the session showed ready: %q %v, want the time left", got, err)
	}
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for _, b := range blocked {
		t.Errorf("blocked by the Content-Security-Policy: %s", b)
	}
}
