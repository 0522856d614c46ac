package server_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/server"
)

// trafficGet sends a request to a traffic host (its name in Host, the
// connection to the test server), with cookie when given, not following
// redirects.
func trafficGet(t *testing.T, base, method, rawURL, cookie string) (*http.Response, string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, base+u.RequestURI(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = u.Host
	if cookie != "" {
		req.Header.Set("Cookie", "podpath_traffic="+cookie+"; app=kept")
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: time.Minute}
	res, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// Who reaches a session's web app (traffic ports): its owner and the
// instructor of its workshop, through podpath's sign-in, on a host name of
// the session's port; no one else, not with a token or cookie of another
// port, not with a forged one, and no one once the session has ended. (The
// fake's nodes have no network: a request that gets through is answered
// "nothing answers on port ..."; TestBrowser opens a real app.)
func TestTrafficPortsWhoGetsThrough(t *testing.T) {
	fake := fakesandbox.New()
	e := startServer(t, workshopConfig(t), fake)
	now := time.Now()
	grace := e.instructor(t, "grace@example.com").noRedirect()
	other := e.instructor(t, "other@example.com").noRedirect()
	w := grace.createWorkshop(t, workshopBody("Class", now.Add(-time.Minute), now.Add(time.Hour), 3, true))
	lee := newClient(t, e.url).noRedirect()
	r, j := lee.join(w.Code, "Lee")
	if r.status != 200 || j.Session == nil {
		t.Fatalf("join: %d %s", r.status, r.body)
	}
	sid := j.Session.ID
	waitReady(t, lee, sid)
	stranger := newClient(t, e.url).noRedirect()
	stranger.signup("stranger@example.com")

	// enter follows podpath's own link and returns the traffic host's
	// entry address.
	enter := func(c *client, path string) (int, string, string) {
		t.Helper()
		res, err := c.http.Get(e.url + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res.StatusCode, res.Header.Get("Location"), string(b)
	}
	st, loc, _ := enter(lee, "/sessions/"+sid+"/traffic/30080/app/index.html?x=1")
	host := sid + "-30080.localhost:" + strings.Split(e.url, ":")[2]
	if st != 303 || !strings.HasPrefix(loc, "http://"+host+"/.podpath/enter?t=") {
		t.Fatalf("the owner is sent to the port's own host: %d %q", st, loc)
	}
	if u, _ := url.Parse(loc); u.Query().Get("to") != "/app/index.html?x=1" {
		t.Errorf("the entry keeps the path and query: %q", loc)
	}

	// The entry token becomes the host's cookie, and the request goes on
	// to the app (where, on the fake, nothing answers).
	res, body := trafficGet(t, e.url, "GET", loc, "")
	var cookie string
	for _, c := range res.Cookies() {
		if c.Name == "podpath_traffic" {
			cookie = c.Value
			if !c.HttpOnly || c.Domain != "" || c.Path != "/" {
				t.Errorf("the cookie is HttpOnly, for this host only: %+v", c)
			}
		}
	}
	if res.StatusCode != 303 || res.Header.Get("Location") != "/app/index.html?x=1" || cookie == "" {
		t.Fatalf("entry: %d %q cookie %q %s", res.StatusCode, res.Header.Get("Location"), cookie, body)
	}
	activity := func() string {
		var v struct{ LastActivityAt string }
		lee.do("GET", "/api/sessions/"+sid, nil).json(t, &v)
		return v.LastActivityAt
	}
	before := activity()
	time.Sleep(1100 * time.Millisecond)
	res, body = trafficGet(t, e.url, "GET", "http://"+host+"/app/index.html?x=1", cookie)
	if res.StatusCode != 502 || !strings.Contains(body, "nothing answers on port 30080 of controlplane") {
		t.Errorf("with the cookie the request reaches the cluster: %d %s", res.StatusCode, body)
	}
	// Using the app is activity: the session is not idle.
	if after := activity(); after == before {
		t.Errorf("the app's use did not count as activity: last activity %s before and after", before)
	}
	// With an app on the port, the app gets the request as the browser
	// sent it, less podpath's cookie, and its answer comes back.
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if websocket.IsWebSocketUpgrade(r) {
			echoWebSocket(w, r, "echo:")
			return
		}
		if r.URL.Path == "/hints" {
			w.Header().Set("Link", "</style.css>; rel=preload; as=style")
			w.WriteHeader(http.StatusEarlyHints)
		}
		fmt.Fprintf(w, "host=%s uri=%s cookie=%s proto=%s", r.Host, r.RequestURI, r.Header.Get("Cookie"), r.Header.Get("X-Forwarded-Proto"))
	}))
	defer app.Close()
	fake.SetPort(30080, app.Listener.Addr().String())
	res, body = trafficGet(t, e.url, "GET", "http://"+host+"/app/index.html?x=1", cookie)
	if want := "host=" + host + " uri=/app/index.html?x=1 cookie=app=kept proto=http"; res.StatusCode != 200 || body != want {
		t.Errorf("the app's answer: %d %q, want %q", res.StatusCode, body, want)
	}

	if res, _ := trafficGet(t, e.url, "GET", "http://"+host+"/hints", cookie); res.StatusCode != 200 {
		t.Errorf("an app that sends 103 Early Hints first: %d", res.StatusCode)
	}
	// A WebSocket goes through too, both ways.
	dialer := websocket.Dialer{NetDialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, strings.TrimPrefix(e.url, "http://"))
	}, HandshakeTimeout: 10 * time.Second}
	ws, wres, err := dialer.Dial("ws://"+host+"/ws", http.Header{"Cookie": {"podpath_traffic=" + cookie}})
	if err != nil {
		t.Fatalf("a WebSocket to the app: %v %+v", err, wres)
	}
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	if err := ws.WriteMessage(websocket.TextMessage, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if _, msg, err := ws.ReadMessage(); err != nil || string(msg) != "echo:hi" {
		t.Errorf("the app's WebSocket answer: %q %v", msg, err)
	}
	ws.Close()
	// The app's requests are in podpath's log (debug level), by session
	// and port, with the status the browser got.
	wantLog := "msg=traffic session=" + sid + " port=30080 method=GET path=/app/index.html status=200"
	for end := time.Now().Add(5 * time.Second); !strings.Contains(e.logs.String(), "path=/ws status=101") && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
	}
	if logs := e.logs.String(); !strings.Contains(logs, wantLog) || !strings.Contains(logs, "path=/ws status=101") || !strings.Contains(logs, "path=/hints status=200") {
		t.Errorf("the log lacks the app's requests (%q, the WebSocket's 101, and 200 after 103 Early Hints):\n%s", wantLog, logs)
	}

	// Without it, or with a forged one, the browser is sent to sign in
	// through podpath (a GET), or refused (anything else).
	res, _ = trafficGet(t, e.url, "GET", "http://"+host+"/app?y=2", "")
	if res.StatusCode != 303 || !strings.HasSuffix(res.Header.Get("Location"), "/sessions/"+sid+"/traffic/30080/app?y=2") {
		t.Errorf("no cookie: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	forged := cookie[:len(cookie)-2] + "AA"
	if res, _ = trafficGet(t, e.url, "GET", "http://"+host+"/", forged); res.StatusCode != 303 {
		t.Errorf("a forged cookie: %d", res.StatusCode)
	}
	if res, body = trafficGet(t, e.url, "POST", "http://"+host+"/", ""); res.StatusCode != 401 {
		t.Errorf("a POST with no cookie: %d %s", res.StatusCode, body)
	}
	// A cookie and a token are for one port.
	other80 := sid + "-8080.localhost:" + strings.Split(e.url, ":")[2]
	if res, _ = trafficGet(t, e.url, "GET", "http://"+other80+"/", cookie); res.StatusCode != 303 {
		t.Errorf("port 30080's cookie on port 8080's host: %d", res.StatusCode)
	}
	if res, body = trafficGet(t, e.url, "GET", strings.Replace(loc, host, other80, 1), ""); res.StatusCode != 403 {
		t.Errorf("port 30080's entry token on port 8080's host: %d %s", res.StatusCode, body)
	}

	// Another learner is refused, on podpath's side and on the host's;
	// so is an instructor of another workshop. The workshop's instructor
	// gets in.
	if st, _, body := enter(stranger, "/sessions/"+sid+"/traffic/30080/"); st != 403 || !strings.Contains(body, "another learner") {
		t.Errorf("another learner: %d %s", st, body)
	}
	if st, _, body := enter(stranger, "/sessions/"+sid+"/traffic/30080/?lang=zh"); st != 403 || !strings.Contains(body, "另一位学员") {
		t.Errorf("another learner, in Chinese: %d %s", st, body)
	}
	if st, _, _ := enter(other, "/sessions/"+sid+"/traffic/30080/"); st != 403 {
		t.Errorf("another workshop's instructor: %d", st)
	}
	if st, _, _ := enter(stranger, "/sessions/"+sid+"/traffic"); st != 403 {
		t.Errorf("another learner's port picker: %d", st)
	}
	st, gloc, _ := enter(grace, "/sessions/"+sid+"/traffic/30080/")
	if st != 303 || !strings.HasPrefix(gloc, "http://"+host+"/.podpath/enter?t=") {
		t.Fatalf("the workshop's instructor: %d %q", st, gloc)
	}
	res, _ = trafficGet(t, e.url, "GET", gloc, "")
	var graceCookie string
	for _, c := range res.Cookies() {
		graceCookie = c.Value
	}
	anon := newClient(t, e.url).noRedirect()
	if st, loc, _ := enter(anon, "/sessions/"+sid+"/traffic/30080/"); st/100 != 3 || !strings.HasPrefix(loc, "/login") {
		t.Errorf("signed out: %d %q", st, loc)
	}

	// The port picker: a page, a port, a bad port.
	if st, _, body := enter(lee, "/sessions/"+sid+"/traffic"); st != 200 || !strings.Contains(body, "http://"+sid+"-PORT.localhost:") {
		t.Errorf("the port picker: %d %s", st, body)
	}
	if st, loc, _ := enter(lee, "/sessions/"+sid+"/traffic?port=8080"); st != 303 || loc != "/sessions/"+sid+"/traffic/8080/" {
		t.Errorf("pick port 8080: %d %q", st, loc)
	}
	if st, _, body := enter(lee, "/sessions/"+sid+"/traffic?port=70000"); st != 400 || !strings.Contains(body, "between 1 and 65535") {
		t.Errorf("pick port 70000: %d %s", st, body)
	}

	// Once the session ends, no one gets through.
	if r := lee.do("DELETE", "/api/sessions/"+sid, nil); r.status/100 != 2 {
		t.Fatalf("end: %d %s", r.status, r.body)
	}
	if res, body = trafficGet(t, e.url, "GET", "http://"+host+"/", graceCookie); res.StatusCode != 410 {
		t.Errorf("an ended session's app: %d %s", res.StatusCode, body)
	}
	if st, _, _ := enter(lee, "/sessions/"+sid+"/traffic/30080/"); st != 410 {
		t.Errorf("an ended session's link: %d", st)
	}
	// A cookie is good while its podpath sign-in is: signed out, the
	// browser is sent to sign in again (once the last answer, kept 5 s,
	// is old).
	if r := grace.do("POST", "/api/logout", nil); r.status/100 != 2 {
		t.Fatalf("logout: %d %s", r.status, r.body)
	}
	time.Sleep(5100 * time.Millisecond)
	if res, _ = trafficGet(t, e.url, "GET", "http://"+host+"/", graceCookie); res.StatusCode != 303 || !strings.Contains(res.Header.Get("Location"), "/sessions/"+sid+"/traffic/30080/") {
		t.Errorf("a signed-out user's cookie: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
}

// PODPATH_TRAFFIC_DOMAIN is a domain, maybe with a port, or off.
func TestTrafficDomainConfig(t *testing.T) {
	for v, ok := range map[string]bool{"": true, "off": true, "labs.example.com": true, "labs.example.com:8443": true, "Labs.Example.com": true,
		"https://labs.example.com": false, "*.labs.example.com": false, "labs example": false, "labs.example.com/x": false,
		"podpath.example.org": false} {
		cfg := server.DefaultConfig()
		cfg.PublicURL = "https://podpath.example.org"
		cfg.TrafficDomain = v
		if err := cfg.Validate(); (err == nil) != ok {
			t.Errorf("PODPATH_TRAFFIC_DOMAIN=%q: %v", v, err)
		} else if err != nil && !strings.Contains(err.Error(), "PODPATH_TRAFFIC_DOMAIN") {
			t.Errorf("the error names the variable: %v", err)
		}
	}
	cfg := server.DefaultConfig()
	cfg.TrafficDomain = "labs.example.com"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "PODPATH_PUBLIC_URL") {
		t.Errorf("a traffic domain without a public URL: %v", err)
	}
}
