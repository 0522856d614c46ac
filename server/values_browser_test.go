package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/podpath/podpath/internal/browser"
	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/store"
)

// TestLabWithValuesInBrowser walks a lab that draws values for each session
// (services: the Service's name, the replica count) past its first step in
// a real headless Chromium: the first step passed, Next shows the second,
// and every step picked from the list shows, each with the session's own
// Service name where the text names it. Step text rendered from the
// catalog's lab failed here (the steps API answered 500 for every step).
// Then a check's result, below the fold, is brought into view. No cluster:
// the sandbox is a fake; passing a step is recorded in the store.
func TestLabWithValuesInBrowser(t *testing.T) {
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

	do(ctx, t,
		chromedp.Navigate(e.url+"/signup"),
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), "values@example.com"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), "a good password"),
		chromedp.Submit(chromedp.CSS(`input[name=password]`)),
		chromedp.WaitVisible(chromedp.CSS(`.lab-card[data-lab="services"] button.start`)),
		chromedp.Click(chromedp.CSS(`.lab-card[data-lab="services"] button.start`)),
	)
	poll(ctx, t, "the lab page", `location.pathname.startsWith("/sessions/")`, 30*time.Second)
	path, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`))
	id := uuid.MustParse(strings.TrimPrefix(path, "/sessions/"))
	sess, err := e.store.LabSession(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	svc := sess.Values["svc"]
	if svc == "" {
		t.Fatalf("the session drew no Service name: %v", sess.Values)
	}
	const body = `document.querySelector("#step-body").innerText`
	poll(ctx, t, "the first step with the session's Service name", body+`.includes("kubectl expose deployment hello --name `+svc+`")`, 30*time.Second)

	// The first step passed (as a Check would record it): Next shows the second.
	if err := e.store.RecordAttempt(context.Background(), &store.Attempt{LabSessionID: id, StepID: "expose", Kind: store.AttemptCheck, Passed: true, Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	do(ctx, t, chromedp.Navigate(e.url+path))
	poll(ctx, t, "the second step, current", `document.querySelector("#step-list li.current") && document.querySelector("#step-list li.current").dataset.step === "rules" && `+body+`.length > 0`, 30*time.Second)
	// Clicked from script: the fake's lab setup never finishes, so the
	// provisioning overlay stays over the page.
	click := func(sel string) {
		t.Helper()
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const b = document.querySelector('`+sel+`'); if (!b) return false; b.click(); return true; })()`)); err != nil || !ok {
			t.Fatalf("no %s to click (%v)", sel, err)
		}
	}
	click(`#step-list li[data-step="expose"] button`)
	poll(ctx, t, "Next after the passed first step", `document.querySelector("#step-list li.current").dataset.step === "expose" && !document.querySelector("#next-btn").hidden`, 30*time.Second)
	click(`#next-btn`)
	poll(ctx, t, "the second step by Next", `document.querySelector("#step-list li.current").dataset.step === "rules" && `+body+`.includes("iptables")`, 30*time.Second)

	// Every step, picked from the list.
	for _, step := range []string{"by-name", "scale", "no-endpoints", "rules", "expose"} {
		click(`#step-list li[data-step="` + step + `"] button`)
		poll(ctx, t, "step "+step, `document.querySelector("#step-list li.current").dataset.step === "`+step+`" && `+body+`.length > 40`, 30*time.Second)
		if step == "by-name" {
			text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](body))
			if !strings.Contains(text, "curl -s "+svc) || !strings.Contains(text, svc+".default.svc.cluster.local") {
				t.Errorf("step by-name does not name the session's Service %q:\n%s", svc, text)
			}
		}
	}
	if errs, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#results .result.failed")].map((li) => li.textContent).join("\n")`)); errs != "" {
		t.Errorf("the page shows errors: %s", errs)
	}
	// A check's result, below the fold of a long step, is brought into view.
	click(`#step-list li[data-step="by-name"] button`)
	poll(ctx, t, "step by-name", `document.querySelector("#step-list li.current").dataset.step === "by-name" && `+body+`.length > 40`, 30*time.Second)
	if below, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#results").getBoundingClientRect().top > window.innerHeight`)); !below {
		t.Fatal("the results are not below the fold before Check: the test proves nothing")
	}
	click(`#check-btn`)
	poll(ctx, t, "the check's result in view", `(() => { const li = document.querySelector("#results .result"); if (!li) return false; const r = li.getBoundingClientRect(); return r.top >= 0 && r.bottom <= window.innerHeight; })()`, 30*time.Second)
	shot(ctx, t, "values-lab")
}
