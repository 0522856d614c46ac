package server_test

import (
	"context"
	"encoding/json"
	"github.com/podpath/podpath/accounts"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/server"
	"github.com/podpath/podpath/store"
	"github.com/podpath/podpath/webhooks"
)

// adminClient makes an admin account in the store and signs it in.
func (e *env) adminClient(t *testing.T, email string) *client {
	t.Helper()
	hash, _ := accounts.HashPassword("admin password")
	if _, err := e.store.CreateUser(context.Background(), email, "Root", hash, store.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, e.url)
	var out struct{ CSRFToken string }
	r := c.do("POST", "/api/login", map[string]string{"email": email, "password": "admin password"})
	if r.status != 200 {
		t.Fatalf("admin login: %d %s", r.status, r.body)
	}
	r.json(t, &out)
	c.csrf = out.CSRFToken
	return c
}

// The admin API refuses what it cannot use, saying what to fix, and writes
// nothing then; learners get 403; a registered webhook hears a learner's
// lab start, signed, and its delivery shows in the admin's list.
func TestWebhooksAdminAndLabStarted(t *testing.T) {
	e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
	admin := e.adminClient(t, "root@example.com")
	learner := newClient(t, e.url)
	learnerID := learner.signup("ada@example.com")

	const secret = "0123456789abcdef-secret"
	good := map[string]any{"url": "http://127.0.0.1:1/hook", "secret": secret, "events": []string{"lab.started"}}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range good {
			m[kk] = vv
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name string
		body any
		want string
	}{
		{"no url", with("url", nil), `send "url"`},
		{"ftp url", with("url", "ftp://example.com/x"), "must start with http:// or https://"},
		{"relative url", with("url", "/hook"), "must start with http:// or https://"},
		{"no host", with("url", "http:///hook"), "has no host"},
		{"credentials in url", with("url", "https://u:p@example.com/"), "must not hold a user name or password"},
		{"not a url", with("url", "http://[::1"), "is not a URL"},
		{"empty secret", with("secret", ""), `send "secret"`},
		{"blank secret", with("secret", "      "), `send "secret"`},
		{"short secret", with("secret", "abc"), "use at least 16"},
		{"no events", with("events", []string{}), `send "events"`},
		{"unknown event", with("events", []string{"lab.started", "lab.exploded"}), `"lab.exploded" is not an event type`},
		{"unknown field", map[string]any{"url": "http://x.test/", "secret": secret, "events": []string{"lab.started"}, "active": true}, `unknown field "active"`},
	} {
		r := admin.do("POST", "/api/admin/webhooks", tc.body)
		if r.status != 400 || !strings.Contains(r.errorMessage(), tc.want) {
			t.Errorf("%s: %d %s, want 400 saying %q", tc.name, r.status, r.body, tc.want)
		}
	}
	var list []server.WebhookView
	admin.do("GET", "/api/admin/webhooks", nil).json(t, &list)
	if ws, _ := e.store.Webhooks(context.Background()); len(list) != 0 || len(ws) != 0 {
		t.Fatalf("refused registrations wrote webhooks: %v", list)
	}

	// Learners and strangers may not touch webhooks.
	for _, rq := range []struct{ method, path string }{
		{"POST", "/api/admin/webhooks"}, {"GET", "/api/admin/webhooks"}, {"DELETE", "/api/admin/webhooks/1"},
		{"GET", "/api/admin/webhooks/1/deliveries"}, {"POST", "/api/admin/webhooks/1/deliveries/1/retry"},
	} {
		var body any
		if rq.method == "POST" {
			body = good
		}
		if r := learner.do(rq.method, rq.path, body); r.status != 403 || !strings.Contains(r.errorMessage(), "only admins") {
			t.Errorf("learner %s %s: %d %s, want 403", rq.method, rq.path, r.status, r.body)
		}
		if r := newClient(t, e.url).do(rq.method, rq.path, body); r.status != 401 {
			t.Errorf("stranger %s %s: %d, want 401", rq.method, rq.path, r.status)
		}
	}
	if ws, _ := e.store.Webhooks(context.Background()); len(ws) != 0 {
		t.Fatal("a learner's registration was written")
	}

	// A receiver for lab.started, and one for other events only.
	type got struct {
		header http.Header
		body   []byte
	}
	var mu sync.Mutex
	var received []got
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		received = append(received, got{r.Header.Clone(), b})
		mu.Unlock()
	}))
	defer rcv.Close()
	var hook server.WebhookView
	r := admin.do("POST", "/api/admin/webhooks", with("url", rcv.URL+"/podpath"))
	if r.status != 201 {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	r.json(t, &hook)
	if strings.Contains(string(r.body), secret) || hook.SecretHint != "…cret" || hook.URL != rcv.URL+"/podpath" || len(hook.Events) != 1 {
		t.Errorf("registered webhook: %s", r.body)
	}
	r = admin.do("POST", "/api/admin/webhooks", with("events", []string{"workshop.ended", "lab.completed", "workshop.ended"}))
	if r.status != 201 {
		t.Fatalf("register another: %d %s", r.status, r.body)
	}
	var other server.WebhookView
	r.json(t, &other)
	if strings.Join(other.Events, ",") != "workshop.ended,lab.completed" {
		t.Errorf("events not de-duplicated: %v", other.Events)
	}
	r = admin.do("GET", "/api/admin/webhooks", nil)
	if strings.Contains(string(r.body), secret) {
		t.Errorf("the list shows a secret: %s", r.body)
	}

	// A learner's start is not slowed by the webhook and is heard by it.
	var sess struct{ ID string }
	r = learner.do("POST", "/api/labs/yaml-to-process/sessions", nil)
	if r.status != 201 {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	r.json(t, &sess)
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(received)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the receiver heard nothing of the start within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	first := received[0]
	mu.Unlock()
	if err := webhooks.Verify([]byte(secret), first.header.Get("X-Podpath-Signature"), first.body, 5*time.Minute, time.Now()); err != nil {
		t.Errorf("signature: %v", err)
	}
	var ev struct {
		ID   string
		Type string
		Data webhooks.LabStartedData
	}
	if err := json.Unmarshal(first.body, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != "lab.started" || first.header.Get("X-Podpath-Event") != "lab.started" || first.header.Get("X-Podpath-Delivery") != ev.ID ||
		ev.Data.User.ID != learnerID || ev.Data.User.Email != "ada@example.com" || ev.Data.LabID != "yaml-to-process" || ev.Data.SessionID != sess.ID || ev.Data.WorkshopID != nil {
		t.Errorf("lab.started: headers %v body %s", first.header, first.body)
	}

	// The admin sees the delivery; the other webhook got none.
	path := "/api/admin/webhooks/" + strconv.FormatInt(hook.ID, 10) + "/deliveries"
	var ds []server.DeliveryView
	deadline = time.Now().Add(10 * time.Second)
	for {
		admin.do("GET", path, nil).json(t, &ds)
		if len(ds) == 1 && ds[0].Status == "delivered" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(ds) != 1 || ds[0].Status != "delivered" || ds[0].EventID != ev.ID || ds[0].Type != "lab.started" || ds[0].Attempts != 1 ||
		ds[0].LastStatusCode == nil || *ds[0].LastStatusCode != 200 || ds[0].DeliveredAt == nil || ds[0].NextAttemptAt != nil {
		t.Errorf("deliveries: %+v", ds)
	}
	var none []server.DeliveryView
	admin.do("GET", "/api/admin/webhooks/"+strconv.FormatInt(other.ID, 10)+"/deliveries", nil).json(t, &none)
	if len(none) != 0 {
		t.Errorf("a webhook not subscribed to lab.started got %d deliveries", len(none))
	}
	if r := admin.do("POST", path+"/"+strconv.FormatInt(ds[0].ID, 10)+"/retry", nil); r.status != 404 || !strings.Contains(r.errorMessage(), "delivered ones are not sent again") {
		t.Errorf("retry of a delivered delivery: %d %s", r.status, r.body)
	}

	// Bad ids, deletion.
	if r := admin.do("GET", "/api/admin/webhooks/abc/deliveries", nil); r.status != 400 || !strings.Contains(r.errorMessage(), "is not a webhook id") {
		t.Errorf("bad id: %d %s", r.status, r.body)
	}
	if r := admin.do("DELETE", "/api/admin/webhooks/999999", nil); r.status != 404 || !strings.Contains(r.errorMessage(), "GET /api/admin/webhooks lists them") {
		t.Errorf("unknown id: %d %s", r.status, r.body)
	}
	if r := admin.do("DELETE", "/api/admin/webhooks/"+strconv.FormatInt(hook.ID, 10), nil); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r := admin.do("DELETE", "/api/admin/webhooks/"+strconv.FormatInt(hook.ID, 10), nil); r.status != 404 || !strings.Contains(r.errorMessage(), "already deleted") {
		t.Errorf("delete twice: %d %s", r.status, r.body)
	}
	admin.do("GET", "/api/admin/webhooks", nil).json(t, &list)
	if len(list) != 1 || list[0].ID != other.ID {
		t.Errorf("after delete: %+v", list)
	}
	// History stays readable after delete.
	admin.do("GET", path, nil).json(t, &ds)
	if len(ds) != 1 {
		t.Errorf("a deleted webhook's deliveries: %+v", ds)
	}
}

// Ending a workshop sends workshop.ended once, however often it is ended
// (by the instructor, then by its time running out).
func TestWebhookWorkshopEnded(t *testing.T) {
	e := startServer(t, workshopConfig(t), fakesandbox.New())
	admin := e.adminClient(t, "root@example.com")
	var mu sync.Mutex
	var bodies [][]byte
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
	}))
	defer rcv.Close()
	if r := admin.do("POST", "/api/admin/webhooks", map[string]any{"url": rcv.URL, "secret": "0123456789abcdef", "events": []string{"workshop.ended"}}); r.status != 201 {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	grace := e.instructor(t, "grace@example.com")
	now := time.Now()
	w := grace.createWorkshop(t, workshopBody("Pods 101", now.Add(-time.Minute), now.Add(time.Hour), 3, true))
	if _, j := newClient(t, e.url).join(w.Code, "Lin"); j.Workshop.ID != w.ID {
		t.Fatalf("join: %+v", j)
	}
	for range 2 {
		if r := grace.do("POST", "/api/workshops/"+strconv.FormatInt(w.ID, 10)+"/end", nil); r.status != 200 {
			t.Fatalf("end: %d %s", r.status, r.body)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(bodies)
		mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second) // the workshop ticker (every 200 ms) sees it ended too
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 1 {
		t.Fatalf("workshop.ended arrived %d times, want once", len(bodies))
	}
	var ev struct {
		Type string
		Data webhooks.WorkshopEndedData
	}
	if err := json.Unmarshal(bodies[0], &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != "workshop.ended" || ev.Data.WorkshopID != w.ID || ev.Data.Title != "Pods 101" || ev.Data.Learners != 1 {
		t.Errorf("workshop.ended: %s", bodies[0])
	}
}
