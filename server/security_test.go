package server_test

import (
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
