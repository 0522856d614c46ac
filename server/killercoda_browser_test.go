package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/session"
)

// A learner works through the Killercoda fixture's one-node scenario on a
// real cluster, loaded through PODPATH_LABS, by the page's buttons alone:
// Docker Hub's nginx:1.27 comes through the registry mirror, each verify
// script passes after the step's commands ran in the terminal, and step 3's
// {{TRAFFIC_HOST1_30080}} link opens nginx in a new tab. Then the traffic
// port's WebSocket and the second learner's refusal (checkTraffic).
func TestKillercodaInBrowser(t *testing.T) {
	testenv.RegistryMirror(t)
	mgr := manager(t)
	addr := freeAddr(t)
	cfg := testConfig(testenv.Postgres(t))
	cfg.Listen, cfg.PublicURL = addr, "http://"+addr
	e := startServerWith(t, cfg, session.Manager(mgr), nil, "../labs/testdata/killercoda")
	kira := e.account(t, "kira@example.com")
	ctx := newBrowser(t, 1366, 820, 12*time.Minute)
	signInBrowser(ctx, t, e, "kira@example.com")

	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.querySelector('form[action="/labs/pods-first/start"]').requestSubmit(), true)`)); err != nil {
		t.Fatalf("the scenario's Start on the home page: %v", err)
	}
	poll(ctx, t, "the lab page", `location.pathname.startsWith("/sessions/")`, 30*time.Second)
	sessionID := strings.TrimPrefix(evalString(ctx, t, `location.pathname`), "/sessions/")
	suffix := strings.ReplaceAll(sessionID, "-", "")[:12]
	sandboxName := ""
	t.Cleanup(func() {
		list, _ := mgr.List(context.Background())
		for _, s := range list {
			if strings.HasSuffix(s.Name, suffix) {
				mgr.Delete(context.Background(), s.Name)
			}
		}
	})
	poll(ctx, t, "the cluster", `document.querySelector("#lab").dataset.state === "ready"`, 10*time.Minute)
	list, _ := mgr.List(context.Background())
	for _, s := range list {
		if strings.HasSuffix(s.Name, suffix) {
			sandboxName = s.Name
		}
	}
	onNode := func(node, script string) string {
		var out strings.Builder
		if _, err := mgr.Exec(context.Background(), sandboxName, node, []string{"bash", "-c", script}, nil, &out, nil); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out.String())
	}

	for _, step := range []string{"step1", "step2", "step3"} {
		poll(ctx, t, step, `document.querySelector('#step-list li.current') && document.querySelector('#step-list li.current').dataset.step === "`+step+`" && document.querySelectorAll("#step-body .code-run").length > 0`, 60*time.Second)
		n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#step-body .code-run").length`))
		for b := range n {
			// Each button's command ends (the shell is back at its
			// prompt) before the next: a button stops what still runs.
			if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(document.querySelectorAll("#step-body .code-run")[%d].click(), true)`, b))); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			for wait := 0; onNode("controlplane", "tmux -L podpath display-message -p -t main '#{pane_current_command}'") != "bash"; wait++ {
				if wait == 1800 {
					t.Fatalf("button %d of %s: its command did not end within 3 minutes", b, step)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		do(ctx, t, chromedp.Click(chromedp.CSS(`#check-btn`)))
		poll(ctx, t, "the check of "+step, `document.querySelector("#check-btn").disabled === false && document.querySelector("#results").dataset.passed !== undefined && document.querySelectorAll("#results .result").length > 0`, 4*time.Minute)
		if passed, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#results").dataset.passed === "true"`)); !passed {
			shot(ctx, t, "killercoda-"+step)
			results, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#results`)))
			t.Fatalf("%s did not pass by its buttons: %s", step, results)
		}
		if step == "step3" {
			// The text's traffic link, clicked once the step's verify
			// found nginx on the NodePort: nginx in a new tab.
			ch := chromedp.WaitNewTarget(ctx, func(info *target.Info) bool { return info.URL != "" })
			if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`([...document.querySelectorAll("#step-body a")].find(a => a.textContent.includes("open the app")).click(), true)`)); err != nil {
				t.Fatal(err)
			}
			tab, cancel := chromedp.NewContext(ctx, chromedp.WithTargetID(<-ch))
			poll(tab, t, "nginx in the link's new tab", `document.body && document.body.innerText.includes("Welcome to nginx")`, 60*time.Second)
			if host := evalString(tab, t, `location.host`); !strings.HasPrefix(host, sessionID+"-30080.localhost:") {
				t.Errorf("the link opened %s", host)
			}
			shot(tab, t, "killercoda-traffic")
			cancel()
		}
		do(ctx, t, chromedp.Click(chromedp.CSS(`#next-btn`)))
	}
	// nginx:1.27 came from the mirror: the node pulled Docker Hub's name.
	if img := onNode("controlplane", "KUBECONFIG=/etc/kubernetes/admin.conf kubectl get pod hello -n practice -o jsonpath='{.status.containerStatuses[0].imageID}'"); !strings.HasPrefix(img, "docker.io/library/nginx@sha256:") {
		t.Errorf("hello's image: %q", img)
	}
	checkTraffic(ctx, t, e, mgr, sandboxName, sessionID, kira)
}
