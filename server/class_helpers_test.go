package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/podpath/podpath/internal/browser"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/server"
	"github.com/podpath/podpath/store"
)

// Helpers of the class tests in a browser (workshop_end_browser_test.go,
// i18n_browser_test.go).

// staffNamed signs up an account with a name and makes it an instructor.
func (e *env) staffNamed(t *testing.T, email, name string) *client {
	t.Helper()
	c := newClient(t, e.url)
	r := c.do("POST", "/api/signup", map[string]string{"email": email, "password": "correct horse", "name": name})
	if r.status != 201 {
		t.Fatalf("signup %s: %d %s", email, r.status, r.body)
	}
	var out struct {
		User      server.UserView
		CSRFToken string
	}
	r.json(t, &out)
	c.csrf = out.CSRFToken
	if err := e.store.SetUserRole(context.Background(), out.User.ID, store.RoleInstructor); err != nil {
		t.Fatal(err)
	}
	return c
}

// newBrowser is a headless Chromium tab for the test, closed at its end.
func newBrowser(t *testing.T, width, height int, timeout time.Duration) context.Context {
	t.Helper()
	if _, err := browser.Path(); err != nil {
		testenv.Missing(t, "Chromium (apt-get install -y chromium)")
	}
	ctx, cancel, err := browser.New(context.Background(), width, height)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cancel)
	ctx, stop := context.WithTimeout(ctx, timeout)
	t.Cleanup(stop)
	return ctx
}

func evalString(ctx context.Context, t *testing.T, expr string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// fetchString evaluates an expression that is a promise of a string.
func fetchString(ctx context.Context, t *testing.T, expr string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

func evalBool(ctx context.Context, t *testing.T, expr string) bool {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// visibleStarts counts the Start buttons a learner can see on the page.
const visibleStarts = `[...document.querySelectorAll("button.start, button.start-challenge, a.track-next, button.track-next")].filter((b) => b.checkVisibility()).length`
