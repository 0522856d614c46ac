package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/sandbox"
)

// After sign-in the browser goes to ?next=, which must stay on this site:
// "/%09/evil.example" is "/\t/evil.example", which Chromium reads as
// "//evil.example".
func TestOpenRedirect(t *testing.T) {
	e := startServer(t, testConfig(testenv.Postgres(t)), sandbox.NewManager())
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
	e := startServer(t, cfg, sandbox.NewManager())
	res, err := http.Post(e.url+"/api/signup", "application/json", strings.NewReader(`{"email":"ada@example.com","password":"correct horse"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if ck := res.Header.Get("Set-Cookie"); res.StatusCode != 201 || !strings.Contains(ck, "podpath_session=") || !strings.Contains(ck, "; Secure") {
		t.Errorf("sign-up behind https: %d, cookie %q; want it Secure", res.StatusCode, ck)
	}
}
