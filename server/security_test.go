package server_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
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
