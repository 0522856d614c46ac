package server_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
)

// Every route that takes a session, step or node id answers user B with
// 404 for user A's session, as if it did not exist, and changes nothing:
// A's session stays active, gets no attempt, no extension, no touch, and its
// sandbox keeps its state. A's session is made in the store with no cluster;
// none of these answers may need one. (There are no workshop routes yet;
// add them here when there are.)
func TestCrossUserRoutes(t *testing.T) {
	e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
	a := newClient(t, e.url)
	aID := a.signup("alice@example.com")
	b := newClient(t, e.url)
	b.signup("bob@example.com")
	b.http.Timeout = 10 * time.Second // an event stream opened by mistake must not hang the test
	b.noRedirect()

	sess := e.labSession(t, aID, "yaml-to-process")
	id := sess.ID.String()
	var lab struct{ Steps []struct{ ID string } }
	a.do("GET", "/api/labs/yaml-to-process", nil).json(t, &lab)
	step := lab.Steps[0].ID

	// The session is there for its owner, so B's 404s below mean something.
	if r := a.do("GET", "/api/sessions/"+id, nil); r.status != 200 {
		t.Fatalf("the owner's GET: %d %s", r.status, r.body)
	}
	if r := a.do("GET", "/api/sessions/"+id+"/steps/"+step, nil); r.status != 200 {
		t.Fatalf("the owner's step: %d %s", r.status, r.body)
	}
	ctx := context.Background()
	before, err := e.store.LabSession(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	wsHeaders := []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}
	api := []struct {
		method, path string
		body         any
		headers      []string
	}{
		{"GET", "/api/sessions/" + id, nil, nil},
		{"GET", "/api/sessions/" + id + "/events", nil, nil},
		{"GET", "/api/sessions/" + id + "/steps/" + step, nil, nil},
		{"POST", "/api/sessions/" + id + "/steps/" + step + "/check", map[string]string{"answer": "42"}, nil},
		{"POST", "/api/sessions/" + id + "/steps/" + step + "/check", nil, nil},
		{"POST", "/api/sessions/" + id + "/steps/" + step + "/solve", nil, nil},
		{"POST", "/api/sessions/" + id + "/extend", nil, nil},
		{"POST", "/api/sessions/" + id + "/retry", nil, nil},
		{"DELETE", "/api/sessions/" + id, nil, nil},
		{"GET", "/api/sessions/" + id + "/terminal/controlplane", nil, nil},
		{"GET", "/api/sessions/" + id + "/terminal/controlplane?cols=80&rows=24", nil, wsHeaders},
	}
	for _, tc := range api {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := b.do(tc.method, tc.path, tc.body, tc.headers...)
			if r.status != 404 || r.errorMessage() != "no such session" {
				t.Errorf("as another user: %d %s; want 404 no such session", r.status, r.body)
			}
		})
	}
	// Pages and forms.
	if status, _ := b.page("/sessions/" + id); status != 404 {
		t.Errorf("GET /sessions/%s as another user: %d", id, status)
	}
	if res, body := b.postForm("/sessions/"+id+"/end", url.Values{"csrf": {b.csrf}}); res.StatusCode != 404 {
		t.Errorf("POST /sessions/%s/end as another user: %d %.200s", id, res.StatusCode, body)
	}
	// B's own lists do not show it.
	if r := b.do("GET", "/api/sessions", nil); r.status != 200 || string(r.body) != "[]\n" {
		t.Errorf("B's sessions: %d %s", r.status, r.body)
	}
	var me map[string]any
	b.do("GET", "/api/me", nil).json(t, &me)
	if me["activeSession"] != nil {
		t.Errorf("B's me shows an active session: %v", me)
	}

	// Nothing happened to A's session.
	after, err := e.store.LabSession(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.State != "active" || !after.ExpiresAt.Equal(before.ExpiresAt) || after.Extensions != before.Extensions ||
		!after.LastActivityAt.Equal(before.LastActivityAt) || after.EndReason != nil {
		t.Errorf("A's session changed:\nbefore %+v\nafter  %+v", before, after)
	}
	if sb, err := e.store.SandboxOf(ctx, sess.ID); err != nil || sb.State != "requested" {
		t.Errorf("A's sandbox: %+v %v; want it still requested", sb, err)
	}
	if n := countRows(t, e, "check_attempts"); n != 0 {
		t.Errorf("%d attempts recorded", n)
	}
	if r := a.do("GET", "/api/sessions/"+id, nil); r.status != http.StatusOK {
		t.Errorf("the owner lost the session: %d %s", r.status, r.body)
	}
}
