package server_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"

	"github.com/podpath/podpath/sandbox"
)

// wsEchoEnv makes this test binary a web app instead of running the tests:
// copied into a learner's node and started there with the variable set to
// an address, it serves a page whose script opens a WebSocket back to it
// and shows what the app echoed (checkTraffic).
const wsEchoEnv = "PODPATH_TEST_WSECHO"

func TestMain(m *testing.M) {
	if addr := os.Getenv(wsEchoEnv); addr != "" {
		serveWSEcho(addr)
		return
	}
	os.Exit(m.Run())
}

const wsEchoPage = `<!doctype html><title>waiting</title><p id=out>waiting</p><script>
const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/echo");
ws.onopen = () => ws.send("podpath-ws-" + (6 * 7));
ws.onmessage = (ev) => { document.title = "echo: " + ev.data; document.getElementById("out").textContent = ev.data; };
ws.onerror = () => { document.title = "websocket error"; };
ws.onclose = () => { document.title = "closed"; };
</script>`

func serveWSEcho(addr string) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, wsEchoPage)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) { echoWebSocket(w, r, "") })
	if err := http.ListenAndServe(addr, mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// echoWebSocket upgrades the request and sends each message back, after
// prefix, until the connection closes.
func echoWebSocket(w http.ResponseWriter, r *http.Request, prefix string) {
	c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer c.Close()
	for {
		typ, msg, err := c.ReadMessage()
		if err != nil {
			return
		}
		if err := c.WriteMessage(typ, append([]byte(prefix), msg...)); err != nil {
			return
		}
	}
}

// checkTraffic opens web apps of the learner's real cluster in the
// learner's browser (ctx), through links of podpath's origin: nginx, which
// the scenario's step 3 put behind NodePort 30080, and an app listening on
// the control plane that talks WebSocket; then a second learner, in a
// browser of their own, follows the same links and is refused, on
// podpath's address and on the app's. Last, the owner ends the session,
// and the app's WebSocket closes.
func checkTraffic(ctx context.Context, t *testing.T, e *env, mgr *sandbox.Manager, sandboxName, sessionID string, owner *client) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	code, err := mgr.Exec(context.Background(), sandboxName, "controlplane", []string{"sh", "-c", "cat > /usr/local/bin/wsecho && chmod +x /usr/local/bin/wsecho && systemd-run --quiet --unit wsecho --setenv=" + wsEchoEnv + "=:8765 /usr/local/bin/wsecho && for i in $(seq 60); do curl -fs localhost:8765 >/dev/null && exit 0; sleep 1; done; exit 1"}, f, nil, nil)
	f.Close()
	if err != nil || code != 0 {
		t.Fatalf("copy the WebSocket app into the node and start it: exit %d, %v", code, err)
	}

	port := e.url[strings.LastIndex(e.url, ":")+1:]
	appHost := sessionID + "-30080.localhost:" + port
	do(ctx, t, chromedp.Navigate(e.url+"/sessions/"+sessionID+"/traffic/30080/"))
	poll(ctx, t, "nginx through the traffic port", `document.body && document.body.innerText.includes("Welcome to nginx")`, 30*time.Second)
	if host := evalString(ctx, t, `location.host`); host != appHost {
		t.Errorf("the app opens on its own host %q, not %q", appHost, host)
	}
	do(ctx, t, chromedp.Navigate(e.url+"/sessions/"+sessionID+"/traffic/8765/"))
	poll(ctx, t, "the WebSocket echo through the traffic port", `document.title === "echo: podpath-ws-42"`, 30*time.Second)

	// Another learner, with the links: refused on both addresses.
	e.account(t, "eve@example.com")
	eve := newBrowser(t, 1024, 700, 3*time.Minute)
	signInBrowser(eve, t, e, "eve@example.com")
	for _, link := range []string{e.url + "/sessions/" + sessionID + "/traffic/30080/", "http://" + appHost + "/"} {
		do(eve, t, chromedp.Navigate(link))
		poll(eve, t, "the refusal of "+link, `document.body && document.body.innerText.includes("another learner's lab session")`, 20*time.Second)
		if body := evalString(eve, t, `document.body.innerText`); strings.Contains(body, "Welcome to nginx") {
			t.Errorf("another learner sees the app at %s", link)
		}
	}
	shot(eve, t, "traffic-refused")

	// The session ends: the app's open WebSocket is closed by podpath
	// (who may pass is asked again while a connection lasts), not left
	// to a connection to a deleted node.
	if r := owner.do("DELETE", "/api/sessions/"+sessionID, nil); r.status/100 != 2 {
		t.Fatalf("end the session: %d %s", r.status, r.body)
	}
	poll(ctx, t, "the WebSocket closed after the session ended", `document.title === "closed"`, 45*time.Second)
}
