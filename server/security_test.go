package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/podpath/podpath/accounts"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/server"
)

// After sign-in the browser goes to ?next=, which must stay on this site:
// "/%09/evil.example" is "/\t/evil.example", which Chromium reads as
// "//evil.example".
func TestOpenRedirect(t *testing.T) {
	e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
	c := newClient(t, e.url).noRedirect()
	for _, next := range []string{"/%09/evil.example", "/%0a/evil.example", "//evil.example", "/%5cevil.example", "https://evil.example"} {
		_, html := c.page("/login?next=" + next)
		if !strings.Contains(html, `name="next" value="/"`) {
			t.Errorf("the sign-in page keeps next=%s: %s", next, html[strings.Index(html, "<form"):][:300])
		}
	}
	// Being sent to sign in keeps the whole path and query, escaped.
	res, _ := c.postForm("/sessions/6d816d57-b617-4c20-a24f-8729607d022e/end?lang=zh&x=1", url.Values{})
	if loc := res.Header.Get("Location"); loc != "/login?next="+url.QueryEscape("/sessions/6d816d57-b617-4c20-a24f-8729607d022e/end?lang=zh&x=1") {
		t.Errorf("redirect to sign in: %d %q", res.StatusCode, loc)
	}
}

// --public-url https://... given as a flag (set after the environment is
// read, as here) makes cookies Secure.
func TestSecureCookieFromPublicURL(t *testing.T) {
	cfg := testConfig(testenv.Postgres(t))
	cfg.PublicURL = "https://podpath.example"
	e := startServer(t, cfg, fakesandbox.New())
	res, err := http.Post(e.url+"/api/signup", "application/json", strings.NewReader(`{"email":"ada@example.com","password":"correct horse"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if ck := res.Header.Get("Set-Cookie"); res.StatusCode != 201 || !strings.Contains(ck, "podpath_session=") || !strings.Contains(ck, "; Secure") {
		t.Errorf("sign-up behind https: %d, cookie %q; want it Secure", res.StatusCode, ck)
	}
}

// Sign-in limits: one address guessing is stopped, but the account's owner,
// from another address, still gets in; forwarding headers count only from a
// configured proxy.
func TestLoginLimits(t *testing.T) {
	login := func(c *client, from, email, password string) int {
		t.Helper()
		return c.do("POST", "/api/login", map[string]string{"email": email, "password": password}, "X-Forwarded-For", from).status
	}
	t.Run("behind a trusted proxy", func(t *testing.T) {
		cfg := testConfig(testenv.Postgres(t))
		cfg.TrustedProxies = []string{"127.0.0.1"}
		e := startServer(t, cfg, fakesandbox.New())
		newClient(t, e.url).signup("victim@example.com")
		attacker := newClient(t, e.url)
		limited := false
		for range 12 {
			if login(attacker, "203.0.113.7", "Victim@example.com ", "wrong password") == 429 {
				limited = true
			}
		}
		if !limited {
			t.Error("12 wrong passwords from one address were never limited")
		}
		if got := login(newClient(t, e.url), "198.51.100.9", "victim@example.com", "correct horse"); got != 200 {
			t.Errorf("the owner from their own address: %d, want 200 (locked out by someone else's failures)", got)
		}
		// X-Forwarded-Proto from the proxy marks cookies Secure.
		r, err := http.NewRequest("POST", e.url+"/api/login", strings.NewReader(`{"email":"victim@example.com","password":"correct horse"}`))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("X-Forwarded-Proto", "https")
		r.Header.Set("X-Forwarded-For", "198.51.100.10")
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if ck := res.Header.Get("Set-Cookie"); res.StatusCode != 200 || !strings.Contains(ck, "; Secure") {
			t.Errorf("sign-in through an https proxy: %d %q; want a Secure cookie", res.StatusCode, ck)
		}
	})
	t.Run("no proxy configured", func(t *testing.T) {
		e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
		newClient(t, e.url).signup("victim@example.com")
		attacker := newClient(t, e.url)
		limited := false
		for i := range 12 {
			// A new made-up address each time changes nothing.
			if login(attacker, "203.0.113."+strconv.Itoa(i), "victim@example.com", "wrong password") == 429 {
				limited = true
			}
		}
		if !limited {
			t.Error("X-Forwarded-For from a client no proxy vouches for escaped the limit")
		}
	})
}

// closedWithin reports whether the server closes conn within d (reading and
// dropping whatever it sends first).
func closedWithin(conn net.Conn, d time.Duration) bool {
	conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// A client that trickles a body or holds an idle keep-alive connection is
// cut off, while an event stream outlives every one of those timeouts.
func TestHTTPTimeouts(t *testing.T) {
	cfg := testConfig(testenv.Postgres(t))
	cfg.HTTPReadTimeout, cfg.HTTPWriteTimeout, cfg.HTTPIdleTimeout = 500*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
	e := startServer(t, cfg, fakesandbox.New())
	addr := strings.TrimPrefix(e.url, "http://")

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "POST /api/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"em")
	if !closedWithin(conn, 5*time.Second) {
		t.Error("a body trickling in was waited for 5 s (read timeout 0.5 s)")
	}

	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	fmt.Fprint(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(idle)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", res, err)
	}
	io.Copy(io.Discard, res.Body)
	if !closedWithin(idle, 5*time.Second) {
		t.Error("an idle keep-alive connection was kept 5 s (idle timeout 0.5 s)")
	}

	// An event stream lives on past the read, write and idle timeouts.
	c := newClient(t, e.url)
	sess := e.labSession(t, c.signup("ada@example.com"), "yaml-to-process")
	got := make(chan string, 8)
	go c.sse("/api/sessions/"+sess.ID.String()+"/events", time.Minute, func(event string, _ []byte) bool {
		got <- event
		return event == "ended"
	})
	if ev := <-got; ev != "session" {
		t.Fatalf("first event %q", ev)
	}
	time.Sleep(2 * time.Second)
	// Ending the session sends "ended" to the stream. (Deleting the cluster
	// that was never made may fail; only the event matters here.)
	c.do("DELETE", "/api/sessions/"+sess.ID.String(), nil)
	select {
	case ev := <-got:
		if ev != "ended" {
			t.Errorf("event %q, want ended", ev)
		}
	case <-time.After(20 * time.Second):
		t.Error("the event stream died: no ended event 2 s after it opened")
	}
}

// One user may hold MaxEventStreams event streams open; the next is refused
// with a clear 429, and a closed one makes room again.
func TestEventStreamLimit(t *testing.T) {
	e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
	c := newClient(t, e.url)
	sess := e.labSession(t, c.signup("ada@example.com"), "yaml-to-process")
	path := e.url + "/api/sessions/" + sess.ID.String() + "/events"
	open := func(c *client, path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", path, nil)
		res, err := (&http.Client{Jar: c.http.Jar}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	var streams []*http.Response
	for i := range 8 {
		res := open(c, path)
		if res.StatusCode != 200 {
			t.Fatalf("stream %d: %d", i+1, res.StatusCode)
		}
		streams = append(streams, res)
	}
	res := open(c, path)
	var b []byte
	if res.StatusCode != 200 { // a stream would never end
		b, _ = io.ReadAll(res.Body)
	}
	if res.StatusCode != 429 || !strings.Contains(string(b), "8 event streams") {
		t.Errorf("the ninth stream: %d %s; want 429 saying the limit", res.StatusCode, b)
	}
	// Another user is not affected.
	other := newClient(t, e.url)
	theirs := e.labSession(t, other.signup("lin@example.com"), "yaml-to-process")
	if res := open(other, e.url+"/api/sessions/"+theirs.ID.String()+"/events"); res.StatusCode != 200 {
		t.Errorf("another user's stream: %d", res.StatusCode)
	}
	streams[0].Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := open(c, path)
		if res.StatusCode == 200 {
			break
		}
		res.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("closing a stream did not make room for another within 10 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The sign-in and sign-up forms carry a CSRF token tied to a cookie, so
// another site cannot sign a victim into the attacker's account (whose
// terminal replay the attacker would read later); /api/logout needs the
// X-CSRF-Token like every cookie-authenticated write.
func TestFormCSRF(t *testing.T) {
	e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
	newClient(t, e.url).signup("attacker@example.com")
	creds := url.Values{"email": {"attacker@example.com"}, "password": {"correct horse"}, "next": {"/"}}
	sessions := countRows(t, e, "web_sessions")

	victim := newClient(t, e.url).noRedirect()
	if res, _ := victim.postForm("/login", creds); res.StatusCode != 403 {
		t.Errorf("sign-in form without a token: %d, want 403", res.StatusCode)
	}
	// A token from the attacker's own visit does not match the victim's cookie.
	attacker := newClient(t, e.url)
	stolen := attacker.formToken("/login")
	with := func(v url.Values, token string) url.Values {
		out := url.Values{"csrf": {token}}
		for k, vs := range v {
			out[k] = vs
		}
		return out
	}
	if res, _ := victim.postForm("/login", with(creds, stolen)); res.StatusCode != 403 {
		t.Errorf("sign-in form with another browser's token: %d, want 403", res.StatusCode)
	}
	signup := url.Values{"email": {"new@example.com"}, "password": {"correct horse"}, "name": {"New"}}
	if res, _ := victim.postForm("/signup", signup); res.StatusCode != 403 {
		t.Errorf("sign-up form without a token: %d, want 403", res.StatusCode)
	}
	if n := countRows(t, e, "web_sessions"); n != sessions {
		t.Errorf("refused forms signed someone in: %d sign-ins, want %d", n, sessions)
	}
	if n := countRows(t, e, "users"); n != 1 {
		t.Errorf("a refused sign-up made an account: %d users", n)
	}

	// With the page's own token, both work; next stays on this site.
	if res, body := victim.postForm("/signup", with(signup, victim.formToken("/signup"))); res.StatusCode != 303 || res.Header.Get("Location") != "/" {
		t.Errorf("sign-up form with its token: %d %q %.300s", res.StatusCode, res.Header.Get("Location"), body)
	}
	user := newClient(t, e.url).noRedirect()
	evil := with(creds, user.formToken("/login?next=/%09/evil.example"))
	evil.Set("next", "/\t/evil.example")
	if res, body := user.postForm("/login", evil); res.StatusCode != 303 || res.Header.Get("Location") != "/" {
		t.Errorf("sign-in with next=/\\t/evil.example: %d %q %.300s", res.StatusCode, res.Header.Get("Location"), body)
	}
	if r := user.do("GET", "/api/me", nil); r.status != 200 {
		t.Fatalf("signed in by the form: %d", r.status)
	}

	// Logging out through the API with the cookie needs the CSRF header.
	if r := user.do("POST", "/api/logout", nil); r.status != 403 || !strings.Contains(r.errorMessage(), "X-CSRF-Token") {
		t.Errorf("logout without X-CSRF-Token: %d %s", r.status, r.body)
	}
	if r := user.do("GET", "/api/me", nil); r.status != 200 {
		t.Errorf("a refused logout signed out: %d", r.status)
	}
	var me struct{ CSRFToken string }
	user.do("GET", "/api/me", nil).json(t, &me)
	user.csrf = me.CSRFToken
	if r := user.do("POST", "/api/logout", nil); r.status != 204 {
		t.Errorf("logout with X-CSRF-Token: %d %s", r.status, r.body)
	}
	if r := user.do("GET", "/api/me", nil); r.status != 401 {
		t.Errorf("after logout: %d", r.status)
	}
}

var scriptTag = regexp.MustCompile(`<script[^>]*>`)
var inlineHandler = regexp.MustCompile(`(?i)\son[a-z]+\s*=`)

// Every answer carries the security headers, and no page has a script the
// Content-Security-Policy would block (inline code or handlers).
func TestSecurityHeaders(t *testing.T) {
	e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
	c := newClient(t, e.url)
	sess := e.labSession(t, c.signup("ada@example.com"), "yaml-to-process")
	for _, p := range []string{"/", "/login", "/signup", "/sessions/" + sess.ID.String(), "/no-such-page", "/api/labs", "/api/nope", "/static/js/lab.js"} {
		res, err := c.http.Get(e.url + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		h := res.Header
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"script-src 'self';", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: Content-Security-Policy %q lacks %s", p, csp, want)
			}
		}
		scriptSrc := ""
		for _, d := range strings.Split(csp, ";") {
			if strings.HasPrefix(strings.TrimSpace(d), "script-src") {
				scriptSrc = d
			}
		}
		if strings.Contains(csp, "unsafe-eval") || strings.Contains(scriptSrc, "unsafe-inline") {
			t.Errorf("%s: scripts may be inline or eval'd: %q", p, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "same-origin" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: nosniff %q, Referrer-Policy %q, X-Frame-Options %q", p, h.Get("X-Content-Type-Options"), h.Get("Referrer-Policy"), h.Get("X-Frame-Options"))
		}
		if !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
			continue
		}
		for _, tag := range scriptTag.FindAllString(string(b), -1) {
			if !strings.Contains(tag, ` src="/static/`) && !strings.Contains(tag, `type="application/json"`) {
				t.Errorf("%s: %s would be blocked by the policy (only scripts from /static/ run)", p, tag)
			}
		}
		if m := inlineHandler.FindString(string(b)); m != "" {
			t.Errorf("%s: an inline event handler %q would be blocked", p, m)
		}
	}
}

// /metrics answers admins on the main address, anyone on the separate
// metrics address; /readyz says only whether it is ready.
func TestMetricsAndReadyz(t *testing.T) {
	cfg := testConfig(testenv.Postgres(t))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.MetricsListen = ln.Addr().String()
	ln.Close()
	e := startServer(t, cfg, fakesandbox.New())

	if r := newClient(t, e.url).do("GET", "/metrics", nil); r.status != 401 {
		t.Errorf("/metrics without sign-in: %d, want 401", r.status)
	}
	learner := newClient(t, e.url)
	learner.signup("ada@example.com")
	if r := learner.do("GET", "/metrics", nil); r.status != 403 {
		t.Errorf("/metrics for a learner: %d, want 403", r.status)
	}
	hash, _ := accounts.HashPassword("admin password")
	if _, err := e.store.CreateUser(context.Background(), "root@example.com", "Root", hash, "admin"); err != nil {
		t.Fatal(err)
	}
	var login struct{ Token string }
	newClient(t, e.url).do("POST", "/api/login", map[string]string{"email": "root@example.com", "password": "admin password"}).json(t, &login)
	r := newClient(t, e.url).do("GET", "/metrics", nil, "Authorization", "Bearer "+login.Token)
	if r.status != 200 || !strings.Contains(string(r.body), "podpath_sandboxes") || !strings.Contains(string(r.body), "podpath_terminals_open") {
		t.Errorf("/metrics for an admin: %d %.300s", r.status, r.body)
	}
	m := newClient(t, "http://"+cfg.MetricsListen)
	if r := m.do("GET", "/metrics", nil); r.status != 200 || !strings.Contains(string(r.body), "podpath_sandboxes") {
		t.Errorf("/metrics on the metrics address: %d %.200s", r.status, r.body)
	}
	if r := m.do("GET", "/api/labs", nil); r.status != 404 {
		t.Errorf("the metrics address serves the API: %d", r.status)
	}

	// With the database gone, /readyz says so without its error text.
	e.store.Close()
	r = newClient(t, e.url).do("GET", "/readyz", nil)
	if r.status != 503 || string(r.body) != "not ready\n" {
		t.Errorf("readyz without a database: %d %q; want 503 \"not ready\"", r.status, r.body)
	}
}

// Terminal sizes outside 1..1000 are refused with a clear 400 before any
// cluster is looked at (they used to wrap silently to uint16).
func TestTerminalSize(t *testing.T) {
	e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
	c := newClient(t, e.url)
	sess := e.labSession(t, c.signup("ada@example.com"), "yaml-to-process")
	base := "ws" + strings.TrimPrefix(e.url, "http") + "/api/sessions/" + sess.ID.String() + "/terminal/controlplane"
	h := http.Header{}
	for _, ck := range c.http.Jar.Cookies(mustURL(e.url)) {
		h.Add("Cookie", ck.Name+"="+ck.Value)
	}
	for _, q := range []string{"cols=65616&rows=24", "cols=0&rows=24", "cols=80&rows=-1", "cols=80&rows=1001", "cols=abc&rows=24", "rows=99999"} {
		conn, res, err := websocket.DefaultDialer.Dial(base+"?"+q, h)
		if err == nil {
			conn.Close()
			t.Errorf("%s: the websocket opened", q)
			continue
		}
		if res == nil {
			t.Fatalf("%s: %v", q, err)
		}
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 400 || !strings.Contains(string(b), "whole numbers from 1 to 1000") {
			t.Errorf("%s: %d %s; want 400 saying the range", q, res.StatusCode, b)
		}
	}
}

// Text Postgres would refuse (a NUL, invalid UTF-8) is a 400 that says what
// is wrong, for JSON and forms alike, and nothing is written.
func TestTextInput(t *testing.T) {
	e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
	c := newClient(t, e.url)
	sess := e.labSession(t, c.signup("ada@example.com"), "yaml-to-process")
	var lab struct{ Steps []struct{ ID string } }
	c.do("GET", "/api/labs/yaml-to-process", nil).json(t, &lab)
	check := "/api/sessions/" + sess.ID.String() + "/steps/" + lab.Steps[0].ID + "/check"
	anon := newClient(t, e.url)
	for _, tc := range []struct {
		name, path, body, message string
		c                         *client
	}{
		{"NUL in a name", "/api/signup", `{"email":"lin@example.com","password":"long enough","name":"Lin\u0000"}`, `"name" holds a NUL character`, anon},
		{"NUL in an email", "/api/login", `{"email":"ada\u0000@example.com","password":"long enough"}`, `"email" holds a NUL character`, anon},
		{"invalid UTF-8", "/api/signup", "{\"email\":\"lin@example.com\",\"password\":\"long enough\",\"name\":\"\xff\xfe\"}", "not valid UTF-8", anon},
		{"NUL in an answer", check, `{"answer":"4\u00002"}`, `"answer" holds a NUL character`, c},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.c.do("POST", tc.path, tc.body)
			if r.status != 400 || !strings.Contains(r.errorMessage(), tc.message) {
				t.Errorf("%d %s; want 400 with %q", r.status, r.body, tc.message)
			}
		})
	}
	// Forms, with their CSRF token, are held to the same.
	f := newClient(t, e.url).noRedirect()
	token := f.formToken("/signup")
	for _, form := range []url.Values{
		{"csrf": {token}, "email": {"lin@example.com"}, "password": {"long enough"}, "name": {"Lin\xff"}},
		{"csrf": {token}, "email": {"lin\x00@example.com"}, "password": {"long enough"}},
	} {
		res, body := f.postForm("/signup", form)
		if res.StatusCode != 400 || !strings.Contains(body, "UTF-8 without NUL characters") {
			t.Errorf("sign-up form %q: %d %.300s", form, res.StatusCode, body)
		}
	}
	res, body := f.postForm("/login", url.Values{"csrf": {token}, "email": {"ada\x00@example.com"}, "password": {"correct horse"}})
	if res.StatusCode != 400 || !strings.Contains(body, "UTF-8 without NUL characters") {
		t.Errorf("sign-in form with a NUL: %d %.300s", res.StatusCode, body)
	}
	if n := countRows(t, e, "users"); n != 1 {
		t.Errorf("%d users; bad text made accounts", n)
	}
	if n := countRows(t, e, "check_attempts"); n != 0 {
		t.Errorf("%d attempts recorded", n)
	}
}

// Sign-up is closed unless the operator opens it: the API and the form say
// how to get an account, the pages do not offer it, and nothing is made.
func TestSignupClosedByDefault(t *testing.T) {
	cfg := testConfig(testenv.Postgres(t))
	cfg.AllowSignup = server.DefaultConfig().AllowSignup
	if cfg.AllowSignup {
		t.Fatal("sign-up is open by default")
	}
	e := startServer(t, cfg, fakesandbox.New())
	c := newClient(t, e.url).noRedirect()
	r := c.do("POST", "/api/signup", map[string]string{"email": "ada@example.com", "password": "correct horse"})
	if r.status != 403 || !strings.Contains(r.errorMessage(), "ask its admin for an account") {
		t.Errorf("API sign-up: %d %s", r.status, r.body)
	}
	status, html := c.page("/signup")
	if status != 403 || !strings.Contains(html, "ask its admin for an account") || strings.Contains(html, `action="/signup"`) {
		t.Errorf("sign-up page: %d, form shown: %v", status, strings.Contains(html, `action="/signup"`))
	}
	res, body := c.postForm("/signup", url.Values{"csrf": {c.formToken("/login")}, "email": {"ada@example.com"}, "password": {"correct horse"}})
	if res.StatusCode != 403 || !strings.Contains(body, "ask its admin for an account") {
		t.Errorf("sign-up form: %d", res.StatusCode)
	}
	for _, p := range []string{"/", "/login"} {
		if _, html := c.page(p); strings.Contains(html, `href="/signup`) {
			t.Errorf("%s links to sign-up while it is closed", p)
		}
	}
	if n := countRows(t, e, "users"); n != 0 {
		t.Errorf("%d users made with sign-up closed", n)
	}
}
