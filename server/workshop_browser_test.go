package server_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/podpath/podpath/internal/browser"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
)

// TestWorkshopInBrowser runs a class in two real headless Chromium
// browsers on a real cluster: the instructor creates a 2-seat workshop with
// one cluster prepared (lab static-pods: a control plane alone); the
// learner types the code on the home page, joins as a guest and gets the
// prepared cluster and a shell; passes a step; the board shows it within
// 2 s; the instructor watches the learner type, takes over (the learner
// sees the banner, and ends it) and downloads the results.
func TestWorkshopInBrowser(t *testing.T) {
	if _, err := browser.Path(); err != nil {
		testenv.Missing(t, "Chromium (apt-get install -y chromium)")
	}
	mgr := manager(t)
	cfg := testConfig(testenv.Postgres(t))
	cfg.ReapInterval = time.Second
	e := startServer(t, cfg, session.Manager(mgr))
	ctx0 := context.Background()
	grace := e.instructor(t, "grace@example.com")
	_ = grace

	ictx, icancel, err := browser.New(ctx0, 1500, 900)
	if err != nil {
		t.Fatal(err)
	}
	defer icancel()
	ictx, istop := context.WithTimeout(ictx, 12*time.Minute)
	defer istop()
	lctx, lcancel, err := browser.New(ctx0, 1366, 820)
	if err != nil {
		t.Fatal(err)
	}
	defer lcancel()
	lctx, lstop := context.WithTimeout(lctx, 12*time.Minute)
	defer lstop()

	// The instructor signs in and creates the workshop in the form.
	do(ictx, t,
		chromedp.Navigate(e.url+"/login"),
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), "grace@example.com"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), "correct horse"),
		chromedp.Submit(chromedp.CSS(`input[name=password]`)),
	)
	poll(ictx, t, "signed in", `location.pathname === "/"`, 20*time.Second)
	do(ictx, t, chromedp.Navigate(e.url+"/workshops"))
	poll(ictx, t, "the create form", `document.querySelector('#ws-f-labs input[value="static-pods"]') !== null`, 20*time.Second)
	do(ictx, t,
		chromedp.SendKeys(chromedp.CSS(`#ws-f-title`), "Tuesday class"),
		chromedp.Click(chromedp.CSS(`#ws-f-labs input[value="static-pods"]`)),
		chromedp.SetValue(chromedp.CSS(`#ws-f-seats`), "2"),
		chromedp.SetValue(chromedp.CSS(`#ws-f-prepare`), "1"),
		// The form proposes the next full hour; this class starts now.
		chromedp.SetValue(chromedp.CSS(`#ws-f-starts`), time.Now().Format("2006-01-02T15:04")),
		chromedp.Click(chromedp.CSS(`#ws-f-guests`)),
		chromedp.Click(chromedp.CSS(`#ws-create-btn`)),
	)
	poll(ictx, t, "the instructor page", `/^\/workshops\/\d+$/.test(location.pathname) && !!document.querySelector("#ws-code") && !!document.querySelector("#ws-code").dataset.code`, 20*time.Second)
	code, _ := chromedp.Run(ictx, chromedp.Evaluate[string](`document.querySelector("#ws-code").dataset.code`))
	wsPath, _ := chromedp.Run(ictx, chromedp.Evaluate[string](`location.pathname`))
	wid := strings.TrimPrefix(wsPath, "/workshops/")
	t.Logf("workshop %s, code %s", wid, code)

	// The prepared cluster: "ready 1 of 1" before anyone joins.
	poll(ictx, t, "the prepared cluster", `document.querySelector("#ws-ready").dataset.full === "true"`, 6*time.Minute)
	var prepared string
	for _, sb := range mustSandboxes(t, e) {
		if itoa(sb.PoolWorkshop) == wid && sb.State == store.SandboxHibernated {
			prepared = sb.Name
		}
	}
	if prepared == "" {
		t.Fatal("no hibernated cluster prepared for the workshop")
	}
	shot(ictx, t, "workshop-prepared")

	// The learner types the code on the home page and joins as a guest.
	do(lctx, t,
		chromedp.Navigate(e.url+"/"),
		chromedp.SendKeys(chromedp.CSS(`#join-code`), strings.ToLower(code)),
		chromedp.Click(chromedp.CSS(`#join-btn`)),
	)
	poll(lctx, t, "the join page", `location.pathname === "/join/`+code+`" && document.querySelector("#join-name") !== null`, 20*time.Second)
	do(lctx, t,
		chromedp.SendKeys(chromedp.CSS(`#join-name`), "Ada"),
		chromedp.Click(chromedp.CSS(`#join-form button`)),
	)
	poll(lctx, t, "the lab page", `location.pathname.startsWith("/sessions/")`, 60*time.Second)
	sessPath, _ := chromedp.Run(lctx, chromedp.Evaluate[string](`location.pathname`))
	sess, err := e.store.LabSession(ctx0, mustUUID(t, strings.TrimPrefix(sessPath, "/sessions/")))
	if err != nil || sess.WorkshopID == nil || itoa(*sess.WorkshopID) != wid {
		t.Fatalf("the guest's session: %+v %v", sess, err)
	}
	if sb, err := e.store.SandboxOf(ctx0, sess.ID); err != nil || sb.Name != prepared {
		t.Fatalf("the guest's cluster is %v (%v), not the prepared %s", sb, err, prepared)
	}
	poll(lctx, t, "the workshop's name on the lab page", `document.querySelector("#workshop-title") && document.querySelector("#workshop-title").textContent.includes("Tuesday class")`, 20*time.Second)
	const term = `document.querySelector('.term:not([hidden]) .xterm-rows')`
	poll(lctx, t, "the shell prompt", term+` && `+term+`.innerText.includes("root@controlplane")`, 3*time.Minute)
	typeIn := func(ctx context.Context, sel, text string) {
		t.Helper()
		do(ctx, t,
			chromedp.Click(chromedp.CSS(sel+` .xterm-screen`)),
			chromedp.Focus(chromedp.CSS(sel+` textarea`)),
			browser.InsertText(text),
			browser.PressEnter(),
		)
	}
	// The first step, typed: stop kubelet, ask containerd, find the parent.
	typeIn(lctx, `.term:not([hidden])`, `systemctl stop kubelet; crictl ps --name kube-apiserver; echo PP=$(ps -o ppid= -p "$(crictl inspect "$(crictl ps -q --name '^kube-apiserver$' --state running | head -1)" | jq -r .info.pid)" | tr -d ' ')=PP`)
	poll(lctx, t, "the parent PID", term+`.innerText.match(/PP=\d+=PP/) !== null`, 60*time.Second)
	screen, _ := chromedp.Run(lctx, chromedp.Evaluate[string](term+`.innerText`))
	ppid := regexp.MustCompile(`PP=(\d+)=PP`).FindStringSubmatch(screen)[1]
	poll(lctx, t, "the answer box", `document.querySelector("#answer") !== null && !document.querySelector("#answer").closest("[hidden]")`, 30*time.Second)
	// A wrong answer first, and a raised hand: the board shows the failed
	// check with what was observed, and the hand.
	do(lctx, t, chromedp.SetValue(chromedp.CSS(`#answer`), "1"), chromedp.Click(chromedp.CSS(`#check-btn`)))
	poll(lctx, t, "the failed check", `document.querySelector("#check-btn").disabled === false && document.querySelector("#results").dataset.passed === "false"`, 3*time.Minute)
	poll(ictx, t, "the failed cell on the board", `(() => { const c = document.querySelector('tr[data-learner] td.cell[data-step="static-pods/stop-kubelet"][data-status="failed"]'); return !!c && c.title.includes("The PID you typed") && c.title.includes("1"); })()`, 2*time.Second)
	do(lctx, t, chromedp.Click(chromedp.CSS(`#hand-btn`)))
	poll(ictx, t, "the raised hand on the board", `document.querySelector('tr[data-learner].hand') !== null`, 2*time.Second)
	shot(ictx, t, "workshop-board-stuck")
	do(lctx, t, chromedp.SetValue(chromedp.CSS(`#answer`), ppid), chromedp.Click(chromedp.CSS(`#check-btn`)))
	poll(lctx, t, "the check", `document.querySelector("#check-btn").disabled === false && document.querySelector("#results").dataset.passed !== undefined && document.querySelectorAll("#results .result").length > 0`, 3*time.Minute)
	if passed, _ := chromedp.Run(lctx, chromedp.Evaluate[bool](`document.querySelector("#results").dataset.passed === "true"`)); !passed {
		results, _ := chromedp.Run(lctx, chromedp.Text(chromedp.CSS(`#results`)))
		t.Fatalf("the first step did not pass: %s", results)
	}
	// The board shows it within 2 s of the result on the learner's page.
	poll(ictx, t, "the passed cell on the board", `document.querySelector('tr[data-learner] td.cell[data-step="static-pods/stop-kubelet"][data-status="passed"]') !== null`, 2*time.Second)
	shot(ictx, t, "workshop-board")

	// Over the shoulder: the instructor watches; the learner types.
	do(ictx, t, chromedp.Click(chromedp.CSS(`tr[data-learner] .watch-link`)))
	poll(ictx, t, "the watch page", `location.pathname.includes("/learners/") && document.querySelector("#watch-mode").dataset.mode === "watch" && document.querySelector(".term .xterm-rows") !== null`, 30*time.Second)
	const wterm = `document.querySelector('#term-host .term:not([hidden]) .xterm-rows')`
	poll(ictx, t, "the learner's screen, replayed", wterm+` && `+wterm+`.innerText.includes("PP=")`, 30*time.Second)
	typeIn(lctx, `.term:not([hidden])`, "echo LEARNER$((6*7))")
	poll(ictx, t, "the learner's typing, live", wterm+`.innerText.includes("LEARNER42")`, 10*time.Second)
	// Keys the watcher types go nowhere.
	typeIn(ictx, `#term-host .term:not([hidden])`, "echo WATCHER$((40+3))")
	typeIn(lctx, `.term:not([hidden])`, "echo AFTER$((40+4))")
	poll(lctx, t, "the learner's next command", term+`.innerText.includes("AFTER44")`, 10*time.Second)
	if mine, _ := chromedp.Run(lctx, chromedp.Evaluate[string](term+`.innerText`)); strings.Contains(mine, "WATCHER") {
		t.Fatalf("keys typed while watching reached the learner's shell:\n%s", mine)
	}
	shot(ictx, t, "workshop-watch")
	// The learner's web apps open for the watching instructor too: the
	// Ports link is the learner's session's port picker (who passes is
	// TestTrafficPortsWhoGetsThrough's).
	if got := evalString(ictx, t, `(() => { const a = document.querySelector("#watch-ports"); return a.hidden ? "hidden" : a.getAttribute("href"); })()`); got != sessPath+"/traffic" {
		t.Errorf("the watch page's Ports link: %q, want %q", got, sessPath+"/traffic")
	}

	// Take over: the learner sees the banner; the instructor's keys run.
	do(ictx, t, chromedp.Click(chromedp.CSS(`#watch-takeover`)))
	poll(ictx, t, "control mode", `document.querySelector("#watch-mode").dataset.mode === "control"`, 10*time.Second)
	poll(lctx, t, "the take-over banner", `!document.querySelector("#takeover-banner").hidden && document.querySelector("#takeover-text").textContent.includes("Test")`, 5*time.Second)
	time.Sleep(time.Second) // the control socket's hello
	typeIn(ictx, `#term-host .term:not([hidden])`, "echo TAKEN$((40+5))")
	poll(lctx, t, "the instructor's command in the learner's terminal", term+`.innerText.includes("TAKEN45")`, 10*time.Second)
	shot(lctx, t, "workshop-takeover-learner")
	do(lctx, t, chromedp.Click(chromedp.CSS(`#takeover-end`)))
	poll(lctx, t, "the banner gone", `document.querySelector("#takeover-banner").hidden`, 5*time.Second)
	poll(ictx, t, "back to watching", `document.querySelector("#watch-mode").dataset.mode === "watch"`, 10*time.Second)
	audit, err := e.store.Takeovers(ctx0, *sess.WorkshopID)
	if err != nil || len(audit) == 0 || audit[0].EndedBy == nil || *audit[0].EndedBy != "learner" || audit[0].Learner != "Ada" {
		t.Fatalf("take-over audit: %+v %v", audit, err)
	}

	// The results, as the instructor's page downloads them.
	do(ictx, t, chromedp.Navigate(e.url+wsPath))
	poll(ictx, t, "the results link", `document.querySelector("#ws-results-csv") !== null && document.querySelector("#ws-results-csv").href.endsWith("results.csv")`, 20*time.Second)
	csvText, err := chromedp.Run(ictx, chromedp.Evaluate[string](`fetch(document.querySelector("#ws-results-csv").href).then((r) => r.text())`, chromedp.EvalAsValue, chromedp.EvalAwaitPromise))
	if err != nil || !regexp.MustCompile(`(?m)^Ada,\d+,true,static-pods,stop-kubelet,[^\n]*,passed,true,2,1,\d+,false,1,`).MatchString(csvText) {
		t.Fatalf("results.csv (%v):\n%s", err, csvText)
	}
	fmt.Fprintln(testWriter{t}, "results.csv:\n"+csvText)

	// End the workshop: the learner's cluster is deleted.
	if r := grace.do("POST", "/api/workshops/"+wid+"/end", nil); r.status != 200 {
		t.Fatalf("end: %d %s", r.status, r.body)
	}
	if s, _ := e.store.LabSession(ctx0, sess.ID); s.State != store.SessionEnded {
		t.Fatalf("the learner's session after the end: %s", s.State)
	}
	// Every cluster of the workshop goes: the learner's and any prepared.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var left []string
		for _, sb := range mustSandboxes(t, e) {
			if itoa(sb.PoolWorkshop) == wid || sb.LabSessionID == sess.ID {
				left = append(left, sb.Name+" "+sb.State)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("clusters of the ended workshop still there after 3 min: %v", left)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
