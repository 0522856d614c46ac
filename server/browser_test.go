package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/podpath/podpath/internal/browser"
	"github.com/podpath/podpath/internal/oidcprovider"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/server"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
	"github.com/podpath/podpath/webhooks"
)

// poll waits until a JavaScript expression is truthy.
func poll(ctx context.Context, t *testing.T, what, expr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for {
		// A poll that spans a navigation (a form post and its redirect)
		// ends with "navigated or closed", or finds the old page's
		// execution context gone: poll again in the new page.
		_, err = chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(time.Until(deadline)), chromedp.WithPollingInterval(250*time.Millisecond)))
		navigated := err != nil && (strings.Contains(err.Error(), "navigated or closed") || strings.Contains(err.Error(), "Cannot find context with specified id"))
		if err == nil || !navigated || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		shot(ctx, t, "failed")
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText.slice(0, 2000)`))
		t.Fatalf("waiting for %s (%s): %v\npage text:\n%s", what, expr, err, body)
	}
}

// shot saves a screenshot next to the test's other output, for debugging.
func shot(ctx context.Context, t *testing.T, name string) {
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err == nil {
		dir := os.Getenv("PODPATH_SCREENSHOTS")
		if dir == "" {
			dir = t.TempDir()
		}
		p := filepath.Join(dir, name+".png")
		os.WriteFile(p, png, 0o644)
		t.Logf("screenshot: %s", p)
	}
}

func do(ctx context.Context, t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		shot(ctx, t, "failed")
		t.Fatal(err)
	}
}

// TestBrowser is a new engineer's first lab, on a real cluster, in a real
// headless Chromium: they sign in through a real OpenID provider, land in
// the team their group maps to, find the track the team assigned with its
// due date, start its first lab from there, wait for the terminal prompt,
// type a command and read its output, run a step's command with its
// button, press Check and read the result, do the whole lab by its
// buttons, and end the session. Then the team's lead sees the lab completed
// in the report, and a webhook receiver has a signed lab.completed.
func TestBrowser(t *testing.T) {
	if _, err := browser.Path(); err != nil {
		testenv.Missing(t, "Chromium (apt-get install -y chromium)")
	}
	mgr := manager(t)
	addr := freeAddr(t)
	cfg := testConfig(testenv.Postgres(t))
	cfg.Listen, cfg.PublicURL = addr, "http://"+addr
	cfg.OIDCClientID, cfg.OIDCClientSecret = "podpath", "client-secret"
	cfg.OIDCAllowedDomains = []string{"example.com"}
	idp, err := oidcprovider.Start(context.Background(), oidcprovider.Options{
		Users:    []oidcprovider.User{{Username: "lin", Password: "lin-pw", Email: "lin@example.com", EmailVerified: true, Name: "Lin", Groups: []string{"platform-eng"}}},
		ClientID: "podpath", ClientSecret: "client-secret", RedirectURIs: []string{cfg.OIDCRedirectURL()},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(idp.Close)
	cfg.OIDCIssuer = idp.Issuer()
	e := startServer(t, cfg, session.Manager(mgr))

	// The admin's side: a team mapped to the group, its lead, the track
	// assigned for next week, a webhook receiver for completions.
	bg := context.Background()
	ann := e.account(t, "ann@example.com")
	annUser, _ := e.store.UserByEmail(bg, "ann@example.com")
	team, err := e.store.CreateTeam(bg, "Platform", "platform-eng", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.AddTeamMember(bg, team.ID, annUser.ID, store.TeamLead, store.ViaAdmin); err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(7 * 24 * time.Hour).UTC().Truncate(time.Minute)
	if _, err := e.store.Assign(bg, team.ID, store.AssignTrack, "from-yaml-to-process", due, annUser.ID); err != nil {
		t.Fatal(err)
	}
	hooks := newHookReceiver(t)
	if _, err := e.store.CreateWebhook(bg, hooks.url, hookSecret, []string{"lab.completed"}, annUser.ID); err != nil {
		t.Fatal(err)
	}

	ctx, cancel, err := browser.New(context.Background(), 1366, 820)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	ctx, stop := context.WithTimeout(ctx, 15*time.Minute)
	defer stop()

	ssoSignIn(ctx, t, e, "lin", "lin-pw")
	poll(ctx, t, "the assigned track", `document.querySelector('#assigned .assignment[data-ref="from-yaml-to-process"] button.start') !== null`, 30*time.Second)
	who, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.who`)))
	if who != "Lin" {
		t.Errorf("signed in as %q", who)
	}
	assigned, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#assigned`)))
	if !strings.Contains(assigned, "From YAML to a process") || !strings.Contains(assigned, "Platform") || !strings.Contains(assigned, "due "+due.Format("2006-01-02 15:04 UTC")) {
		t.Errorf("Assigned to you: %q", assigned)
	}
	shot(ctx, t, "assigned")
	do(ctx, t, chromedp.Click(chromedp.CSS(`#assigned .assignment[data-ref="from-yaml-to-process"] button.start`)))
	poll(ctx, t, "the lab page", `location.pathname.startsWith("/sessions/")`, 30*time.Second)
	sessionPath, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`))
	sessionID := strings.TrimPrefix(sessionPath, "/sessions/")
	t.Cleanup(func() {
		// Whatever happens, remove the cluster.
		list, _ := mgr.List(context.Background())
		for _, s := range list {
			if strings.HasSuffix(s.Name, strings.ReplaceAll(sessionID, "-", "")[:12]) {
				mgr.Delete(context.Background(), s.Name)
			}
		}
	})
	// The provisioning overlay shows stages while the cluster comes up.
	poll(ctx, t, "provisioning stages", `document.querySelectorAll("#stages li").length > 0 || document.querySelector("#lab").dataset.state === "ready"`, 2*time.Minute)
	shot(ctx, t, "provisioning")
	poll(ctx, t, "the cluster", `document.querySelector("#lab").dataset.state === "ready"`, 10*time.Minute)

	// The terminal of the first node shows a prompt; typing runs commands.
	const term = `document.querySelector('.term:not([hidden]) .xterm-rows')`
	poll(ctx, t, "the shell prompt", term+` && `+term+`.innerText.includes("root@controlplane")`, 60*time.Second)
	do(ctx, t,
		chromedp.Click(chromedp.CSS(`.term:not([hidden]) .xterm-screen`)),
		chromedp.Focus(chromedp.CSS(`.term:not([hidden]) textarea`)),
		browser.InsertText("echo podpath-$((6*7))"),
		browser.PressEnter(),
	)
	poll(ctx, t, "the command's output", term+`.innerText.includes("podpath-42")`, 30*time.Second)

	sandboxName := ""
	list, _ := mgr.List(context.Background())
	for _, s := range list {
		if strings.HasSuffix(s.Name, strings.ReplaceAll(sessionID, "-", "")[:12]) {
			sandboxName = s.Name
		}
	}
	onNode := func(node, script string) string {
		var out strings.Builder
		if _, err := mgr.Exec(context.Background(), sandboxName, node, []string{"bash", "-c", "export KUBECONFIG=/etc/kubernetes/admin.conf; " + script}, nil, &out, nil); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out.String())
	}
	// pane is everything the learner's shell on node shows and showed, as
	// its keeper (tmux) has it: what the shell was really given.
	pane := func(node string) string {
		return onNode(node, "tmux -L podpath capture-pane -p -t main -S -2000")
	}
	typeLine := func(line string) {
		t.Helper()
		do(ctx, t,
			chromedp.Click(chromedp.CSS(`.term:not([hidden]) .xterm-screen`)),
			chromedp.Focus(chromedp.CSS(`.term:not([hidden]) textarea`)),
			browser.InsertText(line),
			browser.PressEnter(),
		)
	}
	// Nothing reaches a shell that the learner did not type: a reload at
	// a prompt, a reload while a command runs, the page in the other
	// language (each redraws the screen, and xterm.js answered the redrawn
	// queries into the shell: "0;276;0c"), then Enter and a command.
	garbage := func(node string) {
		t.Helper()
		if p := pane(node); strings.Contains(p, "command not found") || strings.Contains(p, ";276;") {
			t.Fatalf("the shell on %s was given what nobody typed:\n%s", node, p)
		}
	}
	do(ctx, t, chromedp.Reload())
	poll(ctx, t, "the prompt after a reload", term+` && `+term+`.innerText.includes("podpath-42")`, 60*time.Second)
	typeLine("")
	typeLine("echo after-reload-$((3*3))")
	poll(ctx, t, "a command after the reload", term+`.innerText.includes("after-reload-9")`, 30*time.Second)
	typeLine("sleep 4; echo mid-$((2*4))")
	do(ctx, t, chromedp.Navigate(e.url+sessionPath+"?lang=zh"))
	poll(ctx, t, "the command that ran through the reload", term+` && `+term+`.innerText.includes("mid-8")`, 60*time.Second)
	do(ctx, t, chromedp.Navigate(e.url+sessionPath+"?lang=en"))
	poll(ctx, t, "the prompt in English again", term+` && `+term+`.innerText.includes("mid-8")`, 60*time.Second)
	typeLine("")
	typeLine("echo clean-$((5*5))")
	poll(ctx, t, "a command after two reloads", term+`.innerText.includes("clean-25")`, 30*time.Second)
	// Focusing and typing in the terminal does not scroll the page (it
	// did, and left a white strip below the terminal).
	if moved, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const b = document.body, t = document.querySelector(".terminals").getBoundingClientRect(); return (b.scrollTop || document.documentElement.scrollTop) + "/" + Math.round(window.innerHeight - t.bottom); })()`)); moved != "0/0" {
		t.Errorf("the page scrolled while typing in the terminal (scrollTop/gap below the terminal: %s)", moved)
	}
	garbage("controlplane")
	if p := pane("controlplane"); !strings.Contains(p, "echo clean-$((5*5))\nclean-25") {
		t.Errorf("the command was not given as typed:\n%s", p)
	}

	// After the reloads, the first Run button on node01's tab (not opened
	// yet) runs its command whole: it waits for the tab's connection.
	do(ctx, t, chromedp.Click(chromedp.CSS(`#step-list li[data-step="kubelet"] button`)))
	poll(ctx, t, "the kubelet step's node01 command", `document.querySelector('#step-body pre[data-node="node01"] .code-run') !== null`, 30*time.Second)
	if opened, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('.term[data-node="node01"] .xterm') !== null`)); opened {
		t.Fatal("node01's tab is open already: the test proves nothing")
	}
	do(ctx, t, chromedp.Click(chromedp.CSS(`#step-body pre[data-node="node01"] .code-run`)))
	poll(ctx, t, "the command's output on node01", term+` && `+term+`.innerText.includes("root@node01") && `+term+`.innerText.includes("POD ID")`, 60*time.Second)
	garbage("node01")
	if p := pane("node01"); strings.Contains(p, "^C") {
		t.Errorf("the Run button left ^C on node01's prompt line:\n%s", p)
	}
	do(ctx, t, chromedp.Click(chromedp.CSS(`.term-tab[data-node="controlplane"]`)))
	do(ctx, t, chromedp.Click(chromedp.CSS(`#step-list li[data-step="stop-scheduler"] button`)))
	poll(ctx, t, "the first step again", `document.querySelector('#step-list li.current').dataset.step === "stop-scheduler"`, 30*time.Second)

	// A step's "run in terminal" button types its command in the right tab,
	// stopping a program left running first (a watch would swallow it).
	typeLine("sleep 600")
	for i := 0; onNode("controlplane", "tmux -L podpath display-message -p -t main '#{pane_current_command}'") != "sleep"; i++ {
		if i == 50 {
			t.Fatal("sleep 600 does not run in the controlplane shell")
		}
		time.Sleep(100 * time.Millisecond)
	}
	do(ctx, t, chromedp.Click(chromedp.CSS(`#step-body pre[data-node="controlplane"] .code-run`)))
	poll(ctx, t, "the step command's output", term+`.innerText.includes("kube-scheduler.yaml")`, 30*time.Second)
	if p := pane("controlplane"); !regexp.MustCompile(`sleep 600\n\^C\n[^\n]*# ls /etc/kubernetes/manifests\n`).MatchString(p) {
		t.Errorf("the Run button did not stop sleep and type its command whole at the prompt:\n%s", p)
	}

	// Check judges the real cluster: nothing is done yet, so it fails with
	// what it observed and a hint.
	do(ctx, t, chromedp.Click(chromedp.CSS(`#check-btn`)))
	poll(ctx, t, "check results", `document.querySelectorAll("#results .result").length >= 2`, 60*time.Second)
	results, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#results`)))
	if !strings.Contains(results, "✗") || !strings.Contains(results, "Observed") {
		t.Errorf("check results: %q", results)
	}
	shot(ctx, t, "lab-page")

	// The node01 tab is a shell on the worker.
	do(ctx, t, chromedp.Click(chromedp.CSS(`.term-tab[data-node="node01"]`)))
	poll(ctx, t, "the node01 prompt", term+` && `+term+`.innerText.includes("root@node01")`, 60*time.Second)

	// The whole lab by its buttons alone, as a new learner would: every
	// "run in terminal" button of a step in order, the answer where one is
	// asked (read off the cluster, as the learner reads it off the
	// terminal), Check, Next. The schedule step leaves `kubectl get pods -w`
	// running: the buttons after it must still work.
	answers := map[string]func() string{
		"etcd": func() string {
			return "/registry/pods/default/" + onNode("controlplane", "kubectl get pods -l app=web -o jsonpath='{.items[0].metadata.name}'")
		},
		// The sandbox ID as crictl pods shows it in the terminal (13 characters).
		"kubelet": func() string {
			return onNode("node01", "crictl pods -q --label app=web --state ready | head -1 | cut -c1-13")
		},
		"process": func() string { return onNode("node01", "crictl inspect $(crictl ps -q --name nginx) | jq .info.pid") },
	}
	do(ctx, t, chromedp.Click(chromedp.CSS(`#step-list li[data-step="stop-scheduler"] button`)))
	for i, step := range []string{"stop-scheduler", "apply", "etcd", "schedule", "kubelet", "process"} {
		poll(ctx, t, "step "+step, `document.querySelector('#step-list li.current') && document.querySelector('#step-list li.current').dataset.step === "`+step+`" && document.querySelectorAll("#step-body .code-run").length > 0`, 30*time.Second)
		n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#step-body .code-run").length`))
		for b := range n {
			// The button's node and command, then the click; the next
			// button waits until this command is done (the shell is back
			// at its prompt), however slow the cluster is: a button sends
			// Ctrl-C to whatever still runs. A watch (-w) never ends: the
			// next button is meant to stop it.
			code, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](fmt.Sprintf(`(() => { const b = document.querySelectorAll("#step-body .code-run")[%d], pre = b.closest("pre"); b.click(); return [pre.dataset.node || "controlplane", pre.querySelector("code").textContent]; })()`, b)))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(code[1], " -w") {
				time.Sleep(4 * time.Second)
				continue
			}
			time.Sleep(300 * time.Millisecond)
			for wait := 0; onNode(code[0], "tmux -L podpath display-message -p -t main '#{pane_current_command}'") != "bash"; wait++ {
				if wait == 600 {
					t.Fatalf("the command of button %d of step %s on %s did not end within a minute:\n%s", b, step, code[0], pane(code[0]))
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		passed := false
		for try := 0; try < 4 && !passed; try++ {
			// The answer read off the cluster, as the learner reads it off
			// the terminal, at each try: kubelet may not have made the
			// sandbox or the container yet.
			if answer, ok := answers[step]; ok {
				a := answer()
				for wait := 0; a == "" && wait < 60; wait++ {
					time.Sleep(2 * time.Second)
					a = answer()
				}
				do(ctx, t, chromedp.SetValue(chromedp.CSS(`#answer`), a))
			}
			do(ctx, t, chromedp.Click(chromedp.CSS(`#check-btn`)))
			poll(ctx, t, "the check of "+step, `document.querySelector("#check-btn").disabled === false && document.querySelector("#results").dataset.passed !== undefined && document.querySelectorAll("#results .result").length > 0`, 3*time.Minute)
			passed, _ = chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#results").dataset.passed === "true"`))
			if !passed {
				time.Sleep(5 * time.Second)
			}
		}
		if !passed {
			shot(ctx, t, "lab1-"+step)
			results, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#results`)))
			screen, _ := chromedp.Run(ctx, chromedp.Evaluate[string](term+`.innerText`))
			t.Fatalf("step %s did not pass by its buttons: %s\nterminal:\n%s", step, results, screen)
		}
		if i < 5 {
			do(ctx, t, chromedp.Click(chromedp.CSS(`#next-btn`)))
		}
	}
	// The end of the lab says what happened: every step passed by the
	// learner, none skipped, the time taken, the takeaways, and the next
	// lab's Start.
	poll(ctx, t, "the lab's end", `!document.querySelector("#lab-end").hidden && document.querySelectorAll("#end-steps li").length === 6`, 30*time.Second)
	all, _ := labs.Builtin()
	lab1 := labs.Find(all, "yaml-to-process")
	endText, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#lab-end`)))
	if !strings.Contains(endText, "6 of 6 steps passed, 0 skipped") || !strings.Contains(endText, "Time taken: ") {
		t.Errorf("the lab's end: %q", endText)
	}
	for _, line := range lab1.Takeaways.Lines("en") {
		if !strings.Contains(endText, line) {
			t.Errorf("the lab's end lacks the takeaway %q", line)
		}
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#end-steps li.passed").length`)); n != 6 {
		t.Errorf("%d steps passed at the lab's end, want 6", n)
	}
	if action, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#next-form").getAttribute("action")`)); action != "/labs/scheduler/start" {
		t.Errorf("the next lab's Start posts to %q", action)
	}
	shot(ctx, t, "lab-end")

	// The lead sees it in the team's report; the receiver has a signed
	// lab.completed for Lin's session.
	var rep server.TeamReport
	ann.do("GET", "/api/teams/"+strconv.FormatInt(team.ID, 10)+"/report", nil).json(t, &rep)
	if len(rep.Members) != 2 {
		t.Fatalf("report members: %d, want the lead and Lin", len(rep.Members))
	}
	for _, m := range rep.Members {
		if m.Email != "lin@example.com" {
			continue
		}
		p := m.Assignments[0]
		if p.LabsDone != 1 || p.Labs[0].Lab != "yaml-to-process" || p.Labs[0].Status != "completed" || p.Labs[0].CompletedAt == nil || p.NextLab != "scheduler" || m.Via != "sso" {
			t.Errorf("Lin in the report: %+v, first lab %+v", p, p.Labs[0])
		}
	}
	ev := hooks.wait(t, "lab.completed", time.Minute)
	var done struct{ Data webhooks.LabCompletedData }
	json.Unmarshal(ev.body, &done)
	if done.Data.LabID != "yaml-to-process" || done.Data.SessionID != sessionID || done.Data.User.Email != "lin@example.com" || done.Data.Skips != 0 {
		t.Errorf("lab.completed: %s", ev.body)
	}

	// Ending the session deletes its cluster.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(window.confirm = () => true, true)`)); err != nil {
		t.Fatal(err)
	}
	do(ctx, t, chromedp.Click(chromedp.CSS(`#end-form button`)))
	poll(ctx, t, "the labs page", `location.pathname === "/"`, 2*time.Minute)
	list, _ = mgr.List(context.Background())
	for _, s := range list {
		if strings.HasSuffix(s.Name, strings.ReplaceAll(sessionID, "-", "")[:12]) {
			t.Errorf("cluster %s still exists after the session ended", s.Name)
		}
	}
}

const hookSecret = "a-webhook-secret-of-32-characters"

// hookReceiver is a webhook receiver that keeps every request whose
// signature verifies, and fails the test on one that does not.
type hookReceiver struct {
	url  string
	mu   sync.Mutex
	got  []hookEvent
	seen chan struct{}
}

type hookEvent struct {
	typ  string
	body []byte
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{seen: make(chan struct{}, 100)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhooks.Verify([]byte(hookSecret), r.Header.Get(webhooks.SignatureHeader), body, 5*time.Minute, time.Now()); err != nil {
			t.Errorf("webhook %s: the signature does not verify: %v", r.Header.Get(webhooks.EventHeader), err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.got = append(h.got, hookEvent{typ: r.Header.Get(webhooks.EventHeader), body: body})
		h.mu.Unlock()
		h.seen <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// wait returns the first event of the type, waiting for it up to timeout.
func (h *hookReceiver) wait(t *testing.T, typ string, timeout time.Duration) hookEvent {
	t.Helper()
	deadline := time.After(timeout)
	for {
		h.mu.Lock()
		for _, ev := range h.got {
			if ev.typ == typ {
				h.mu.Unlock()
				return ev
			}
		}
		h.mu.Unlock()
		select {
		case <-h.seen:
		case <-deadline:
			t.Fatalf("no %s webhook within %s", typ, timeout)
		}
	}
}
