package server_test

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5"

	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/server"
	"github.com/podpath/podpath/server/terminal"
	"github.com/podpath/podpath/store"
	"github.com/podpath/podpath/workshops"
)

type workshopView struct {
	ID       int64
	Title    string
	Code     string
	JoinURL  string
	Seats    int
	Learners int
	State    string
	Prepare  int
	Clusters *struct {
		Target, Ready, Creating, Claimed int
		Fits                             bool
		CapacityNote                     string
	}
	Broadcast *struct{ Message string }
}

type joinView struct {
	Workshop  workshopView
	Session   *struct{ ID, LabID string }
	Guest     bool
	CSRFToken string
}

// instructor signs up an account and makes it an instructor.
func (e *env) instructor(t *testing.T, email string) *client {
	t.Helper()
	c := newClient(t, e.url)
	id := c.signup(email)
	if err := e.store.SetUserRole(context.Background(), id, store.RoleInstructor); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *client) createWorkshop(t *testing.T, body map[string]any) workshopView {
	t.Helper()
	r := c.do("POST", "/api/workshops", body)
	if r.status != 201 {
		t.Fatalf("create workshop: %d %s", r.status, r.body)
	}
	var w workshopView
	r.json(t, &w)
	return w
}

func workshopBody(title string, starts, ends time.Time, seats int, guests bool) map[string]any {
	return map[string]any{"title": title, "labs": []string{"yaml-to-process", "scheduler"}, "seats": seats,
		"startsAt": starts.Format(time.RFC3339), "endsAt": ends.Format(time.RFC3339), "guests": guests, "prepare": 0}
}

func (c *client) join(code, name string) (response, joinView) {
	c.t.Helper()
	r := c.do("POST", "/api/join", map[string]string{"code": code, "name": name})
	var j joinView
	if r.status == 200 {
		r.json(c.t, &j)
		if j.CSRFToken != "" {
			c.csrf = j.CSRFToken
		}
	}
	return r, j
}

func workshopConfig(t *testing.T) server.Config {
	cfg := testConfig(testenv.Postgres(t))
	cfg.ReapInterval = 200 * time.Millisecond
	return cfg
}

// Joining: wrong code, full, not started, ended, double join, a guest of
// one workshop reaching another, and who reaches a board and a terminal.
// Every refusal leaves nothing written: no seat, no guest account.
func TestWorkshopJoinRules(t *testing.T) {
	e := startServer(t, workshopConfig(t), fakesandbox.New())
	ctx := context.Background()
	now := time.Now()
	grace := e.instructor(t, "grace@example.com")
	other := e.instructor(t, "other@example.com")

	// A learner cannot create one; bad requests say what to fix.
	learner := newClient(t, e.url)
	learner.signup("lin@example.com")
	if r := learner.do("POST", "/api/workshops", workshopBody("x", now, now.Add(time.Hour), 2, true)); r.status != 403 || !strings.Contains(r.errorMessage(), "podpath user role") {
		t.Fatalf("a learner creating a workshop: %d %s", r.status, r.body)
	}
	for _, bad := range []struct {
		patch map[string]any
		want  string
	}{
		{map[string]any{"labs": []string{"no-such-lab"}}, `no lab "no-such-lab"`},
		{map[string]any{"seats": 0}, `"seats" must be from 1`},
		{map[string]any{"endsAt": now.Add(-2 * time.Hour).Format(time.RFC3339)}, `"endsAt" must be after "startsAt"`},
		{map[string]any{"prepare": 9}, `"prepare"`},
		{map[string]any{"title": " "}, `"title"`},
	} {
		body := workshopBody("Class", now.Add(-time.Minute), now.Add(time.Hour), 2, true)
		for k, v := range bad.patch {
			body[k] = v
		}
		if r := grace.do("POST", "/api/workshops", body); r.status != 400 || !strings.Contains(r.errorMessage(), bad.want) {
			t.Errorf("create with %v: %d %s, want 400 saying %s", bad.patch, r.status, r.body, bad.want)
		}
	}
	if n := countRows(t, e, "workshops"); n != 0 {
		t.Fatalf("refused creates wrote %d workshops", n)
	}

	open := grace.createWorkshop(t, workshopBody("Open class", now.Add(-time.Minute), now.Add(time.Hour), 2, true))
	if len(open.Code) != 11 || open.Code[5] != '-' || strings.ContainsAny(open.Code, "0O1lI") || !strings.HasSuffix(open.JoinURL, "/join/"+open.Code) {
		t.Fatalf("code %q / join URL %q: want 10 readable characters shown ABCDE-FGHJK, and /join/CODE", open.Code, open.JoinURL)
	}
	later := grace.createWorkshop(t, workshopBody("Tomorrow", now.Add(24*time.Hour), now.Add(26*time.Hour), 5, true))
	ended := grace.createWorkshop(t, workshopBody("Yesterday's", now.Add(-time.Minute), now.Add(time.Hour), 5, true))
	if r := grace.do("POST", "/api/workshops/"+itoa(ended.ID)+"/end", nil); r.status != 200 {
		t.Fatalf("end: %d %s", r.status, r.body)
	}
	// An ended class holds no clusters: nothing being made, no capacity in use.
	var endedView workshopView
	grace.do("GET", "/api/workshops/"+itoa(ended.ID), nil).json(t, &endedView)
	if endedView.State != store.WorkshopEnded || endedView.Clusters == nil || endedView.Clusters.CapacityNote != "" || endedView.Clusters.Creating != 0 || endedView.Clusters.Ready != 0 {
		t.Errorf("an ended workshop's clusters: %+v", endedView.Clusters)
	}
	accounts := other.createWorkshop(t, workshopBody("Accounts only", now.Add(-time.Minute), now.Add(time.Hour), 5, false))
	// The host (4 cores, 8 GiB for clusters here: 10 clusters of 750 MiB)
	// cannot hold 100 seats, and says so in numbers, in an instructor's
	// words (no operator's variable names) and in the asker's language.
	bigBody := workshopBody("Too big", now.Add(24*time.Hour), now.Add(25*time.Hour), 100, true)
	delete(bigBody, "prepare")
	big := grace.createWorkshop(t, bigBody)
	if big.Clusters == nil || big.Clusters.Fits || !strings.Contains(big.Clusters.CapacityNote, "can run only 10 clusters of this class at once") ||
		!strings.Contains(big.Clusters.CapacityNote, "750 MiB of memory each") || !strings.Contains(big.Clusters.CapacityNote, "100 seats") ||
		strings.Contains(big.Clusters.CapacityNote, "PODPATH_") {
		t.Errorf("a 100-seat class on a small host: %+v", big.Clusters)
	}
	var bigZh workshopView
	grace.do("GET", "/api/workshops/"+itoa(big.ID)+"?lang=zh", nil).json(t, &bigZh)
	if bigZh.Clusters == nil || !strings.Contains(bigZh.Clusters.CapacityNote, "最多只能同时运行 10 个本班的集群") || !strings.Contains(bigZh.Clusters.CapacityNote, "100 个名额") {
		t.Errorf("the capacity note in Chinese: %+v", bigZh.Clusters)
	}
	if open2 := grace.createWorkshop(t, workshopBody("Small", now.Add(24*time.Hour), now.Add(25*time.Hour), 1, true)); open2.Clusters == nil || !open2.Clusters.Fits ||
		!strings.Contains(open2.Clusters.CapacityNote, "with 1 seat, everyone fits") || !strings.Contains(open2.Clusters.CapacityNote, "In use now: 0.0 of 4.0 CPU cores") {
		t.Errorf("a 1-seat class: %+v", open2.Clusters)
	}
	if big.Prepare != 70 {
		t.Errorf("prepare defaults to %d for 100 seats, want 70", big.Prepare)
	}

	usersBefore := countRows(t, e, "users")
	anon := newClient(t, e.url)
	for _, tc := range []struct {
		code   string
		status int
		want   string
	}{
		{"ZZZZZ-ZZZZZ", 404, "no open workshop has the code ZZZZZ-ZZZZZ"},
		{"", 400, "join code"},
		{later.Code, 404, "no open workshop has the code " + later.Code},
		{ended.Code, 404, "no open workshop has the code"},
		{accounts.Code, 401, "needs an account"},
	} {
		r, _ := anon.join(tc.code, "Anon")
		if r.status != tc.status || !strings.Contains(r.errorMessage(), tc.want) {
			t.Errorf("join %q: %d %s, want %d saying %q", tc.code, r.status, r.body, tc.status, tc.want)
		}
	}
	if n := countRows(t, e, "workshop_learners"); n != 0 {
		t.Fatalf("refused joins took %d seats", n)
	}
	if n := countRows(t, e, "users"); n != usersBefore {
		t.Fatalf("refused joins left %d accounts behind", n-usersBefore)
	}

	// A guest joins (code typed in lower case with a space), and again.
	ada := newClient(t, e.url)
	typed := strings.ToLower(open.Code[:3]) + " " + open.Code[3:]
	r, first := ada.join(typed, "Ada")
	if r.status != 200 || !first.Guest || first.Session == nil || first.CSRFToken == "" || first.Workshop.Code != "" {
		t.Fatalf("guest join: %d %s", r.status, r.body)
	}
	if first.Session.LabID != "yaml-to-process" {
		t.Fatalf("the guest's session is of lab %s, want the workshop's first", first.Session.LabID)
	}
	r, again := ada.join(open.Code, "Ada again")
	if r.status != 200 || again.Session == nil || again.Session.ID != first.Session.ID {
		t.Fatalf("joining twice: %d %s; want the same session %s", r.status, r.body, first.Session.ID)
	}
	// Joining again keeps the first name: the join page says it instead of
	// asking for one it would ignore.
	if code, body := ada.page("/join/" + open.Code); code != 200 || !strings.Contains(body, "You are in this workshop as Ada.") || strings.Contains(body, `id="join-name"`) {
		t.Errorf("the join page of a guest who joined: %d\n%s", code, body)
	}
	sess, err := e.store.ActiveLabSession(ctx, me(t, ada).ID)
	if err != nil || sess.WorkshopID == nil || *sess.WorkshopID != open.ID {
		t.Fatalf("the guest's session is not the workshop's: %+v %v", sess, err)
	}
	// A learner with an account takes the second seat; a third is refused.
	if r, j := learner.join(open.Code, ""); r.status != 200 || j.Guest {
		t.Fatalf("account join: %d %s", r.status, r.body)
	}
	usersBefore = countRows(t, e, "users")
	if r, _ := newClient(t, e.url).join(open.Code, "Late"); r.status != 409 || !strings.Contains(r.errorMessage(), "every seat") {
		t.Fatalf("third join of 2 seats: %d %s", r.status, r.body)
	}
	if n := countRows(t, e, "users"); n != usersBefore {
		t.Fatal("a refused guest join left an account behind")
	}
	var w workshopView
	grace.do("GET", "/api/workshops/"+itoa(open.ID), nil).json(t, &w)
	if w.Learners != 2 {
		t.Fatalf("learners = %d after two joins, one twice; want 2", w.Learners)
	}

	// The guest is bound to its workshop: another one, and labs outside it, are refused.
	second := other.createWorkshop(t, workshopBody("Second", now.Add(-time.Minute), now.Add(time.Hour), 5, true))
	if r, _ := ada.join(second.Code, "Ada"); r.status != 403 || !strings.Contains(r.errorMessage(), "guest of another workshop") {
		t.Fatalf("guest of A joining B: %d %s", r.status, r.body)
	}
	ada.do("DELETE", "/api/sessions/"+first.Session.ID, nil)
	if r := ada.do("POST", "/api/labs/cgroups/sessions", nil); r.status != 403 || !strings.Contains(r.errorMessage(), "guest") {
		t.Fatalf("a guest starting a lab outside the workshop: %d %s", r.status, r.body)
	}

	// Who reaches the board, the learner view and the terminal.
	adaID := me(t, ada).ID
	wsHeaders := []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}
	paths := []string{
		"/api/workshops/" + itoa(open.ID),
		"/api/workshops/" + itoa(open.ID) + "/board",
		"/api/workshops/" + itoa(open.ID) + "/results.csv",
		"/api/workshops/" + itoa(open.ID) + "/learners/" + itoa(adaID),
		"/api/workshops/" + itoa(open.ID) + "/learners/" + itoa(adaID) + "/terminal/node01?mode=watch",
	}
	for _, p := range paths {
		if r := learner.do("GET", p, nil, wsHeaders...); r.status != 403 {
			t.Errorf("a learner GET %s: %d %s, want 403", p, r.status, r.body)
		}
		if r := ada.do("GET", p, nil, wsHeaders...); r.status != 403 {
			t.Errorf("a guest GET %s: %d %s, want 403", p, r.status, r.body)
		}
		if r := other.do("GET", p, nil, wsHeaders...); r.status != 404 {
			t.Errorf("another workshop's instructor GET %s: %d %s, want 404", p, r.status, r.body)
		}
		if r := grace.do("GET", p, nil); r.status != 200 && !strings.Contains(p, "/terminal/") {
			t.Errorf("the instructor GET %s: %d %s", p, r.status, r.body)
		}
	}
	// The take-over log page: the workshop's instructor's, nobody else's.
	logPage := "/workshops/" + itoa(open.ID) + "/takeovers"
	for _, tc := range []struct {
		who  string
		c    *client
		want int
	}{{"a learner", learner, 403}, {"a guest", ada, 403}, {"another instructor", other, 404}} {
		if code, body := tc.c.page(logPage); code != tc.want || strings.Contains(body, "Open class") {
			t.Errorf("%s GET %s: %d, want %d and no workshop named", tc.who, logPage, code, tc.want)
		}
	}
	if code, body := grace.page(logPage); code != 200 || !strings.Contains(body, "Nobody has taken over a terminal") || !strings.Contains(body, "Open class") {
		t.Errorf("the instructor's take-over log: %d\n%s", code, body)
	}
	for _, p := range []string{"/broadcast", "/end", "/code", "/learners/" + itoa(adaID) + "/reset"} {
		if r := other.do("POST", "/api/workshops/"+itoa(open.ID)+p, map[string]string{}); r.status != 404 {
			t.Errorf("another instructor POST %s: %d %s, want 404", p, r.status, r.body)
		}
	}
	var after workshopView
	grace.do("GET", "/api/workshops/"+itoa(open.ID), nil).json(t, &after)
	if after.State != store.WorkshopOpen || after.Code != open.Code {
		t.Fatalf("refused writes changed the workshop: %+v", after)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func mustUUID(t *testing.T, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func mustSandboxes(t *testing.T, e *env) []*store.Sandbox {
	t.Helper()
	list, err := e.store.UndeletedSandboxes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// sseAsync streams server-sent events into ch (event, data) until the test ends.
func (c *client) sseAsync(t *testing.T, path string, ch chan<- [2]string) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", c.base+path, nil)
	res, err := (&http.Client{Jar: c.http.Jar}).Do(req)
	if err != nil {
		return
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		ch <- [2]string{"status", strconv.Itoa(res.StatusCode)}
		return
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			select {
			case ch <- [2]string{event, strings.TrimPrefix(line, "data: ")}:
			case <-ctx.Done():
				return
			}
		}
	}
}

// waitEvent waits for an event of the type whose data contains want.
func waitEvent(t *testing.T, ch <-chan [2]string, typ, want string, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev := <-ch:
			if ev[0] == "status" {
				t.Fatalf("event stream answered %s", ev[1])
			}
			if ev[0] == typ && strings.Contains(ev[1], want) {
				return ev[1]
			}
		case <-deadline:
			t.Fatalf("no %q event with %q within %s", typ, want, timeout)
		}
	}
}

// waitReady waits until the session's cluster is ready.
func waitReady(t *testing.T, c *client, id string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var v struct{ Sandbox struct{ State string } }
		c.do("GET", "/api/sessions/"+id, nil).json(t, &v)
		if v.Sandbox.State == store.SandboxReady {
			return
		}
		if v.Sandbox.State == store.SandboxFailed || time.Now().After(deadline) {
			t.Fatalf("session %s's cluster is %s", id, v.Sandbox.State)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func me(t *testing.T, c *client) server.UserView {
	t.Helper()
	var me struct{ User server.UserView }
	r := c.do("GET", "/api/me", nil)
	if r.status != 200 {
		t.Fatalf("/api/me: %d %s", r.status, r.body)
	}
	r.json(t, &me)
	return me.User
}

// dialWS opens a terminal-protocol websocket at path, from a page of
// origin when it is set.
func (c *client) dialWS(t *testing.T, path, origin string) (*term, *http.Response, error) {
	u := "ws" + strings.TrimPrefix(c.base, "http") + path
	h := http.Header{}
	if origin != "" {
		h.Set("Origin", origin)
	}
	for _, ck := range c.http.Jar.Cookies(mustURL(c.base)) {
		h.Add("Cookie", ck.Name+"="+ck.Value)
	}
	conn, res, err := websocket.DefaultDialer.Dial(u, h)
	if err != nil {
		return nil, res, err
	}
	tm := &term{t: t, conn: conn, out: make(chan []byte, 1024), ctl: make(chan terminal.Control, 64)}
	go func() {
		defer close(tm.out)
		for {
			kind, data, err := conn.ReadMessage()
			if err != nil {
				if ce, ok := err.(*websocket.CloseError); ok {
					tm.ctl <- terminal.Control{Type: "closed", Code: &ce.Code, Reason: ce.Text}
				}
				return
			}
			if kind == websocket.BinaryMessage {
				tm.out <- data
			} else {
				var ctl terminal.Control
				json.Unmarshal(data, &ctl)
				tm.ctl <- ctl
			}
		}
	}()
	return tm, res, nil
}

func (tm *term) waitControl(typ string, timeout time.Duration) terminal.Control {
	tm.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case c := <-tm.ctl:
			if c.Type == typ {
				return c
			}
		case <-deadline:
			tm.t.Fatalf("no %q control frame within %s", typ, timeout)
		}
	}
}

// The class, on the fake sandbox (its terminals are local shells): clusters
// prepared ahead and claimed by a joining guest, the live board after a
// check and a raised hand, a broadcast, watching (read-only) and taking
// over (the learner sees it and ends it; the audit record says so), the
// results, a reset keeping progress, and the end deleting every cluster.
func TestWorkshopClass(t *testing.T) {
	fake := fakesandbox.New()
	e := startServer(t, workshopConfig(t), fake)
	ctx := context.Background()
	now := time.Now()
	grace := e.instructor(t, "grace@example.com")
	body := workshopBody("Class", now.Add(-time.Minute), now.Add(time.Hour), 3, true)
	body["prepare"] = 2
	w := grace.createWorkshop(t, body)
	wid := itoa(w.ID)

	// Two clusters are prepared, one at a time, for this workshop.
	deadline := time.Now().Add(20 * time.Second)
	var wv workshopView
	for {
		grace.do("GET", "/api/workshops/"+wid, nil).json(t, &wv)
		if wv.Clusters != nil && wv.Clusters.Ready == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("prepared clusters: %+v, want 2 ready", wv.Clusters)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !wv.Clusters.Fits || !strings.Contains(wv.Clusters.CapacityNote, "with 3 seats, everyone fits") || !strings.Contains(wv.Clusters.CapacityNote, "2 asleep") {
		t.Fatalf("capacity note for 3 seats on a 4-core host: %+v", wv.Clusters)
	}
	var pooled []string
	for _, sb := range mustSandboxes(t, e) {
		if sb.PoolWorkshop == w.ID {
			pooled = append(pooled, sb.Name)
		}
	}
	if len(pooled) != 2 {
		t.Fatalf("%d pool rows are the workshop's, want 2", len(pooled))
	}

	// The instructor's board streams; a guest joins and gets a prepared cluster.
	events := make(chan [2]string, 64)
	go grace.sseAsync(t, "/api/workshops/"+wid+"/events", events)
	waitEvent(t, events, "board", "", 5*time.Second)
	ada := newClient(t, e.url)
	r, j := ada.join(w.Code, "Ada")
	if r.status != 200 {
		t.Fatalf("join: %d %s", r.status, r.body)
	}
	sb, err := e.store.SandboxOf(ctx, mustUUID(t, j.Session.ID))
	if err != nil || !contains(pooled, sb.Name) {
		t.Fatalf("the guest's cluster %s is not one prepared for the workshop %v", sb.Name, pooled)
	}
	waitEvent(t, events, "learner", `"name":"Ada"`, 2*time.Second)
	waitReady(t, ada, j.Session.ID)

	// A failed check reaches the board within 2 s, with what was observed.
	adaID := me(t, ada).ID
	var lab struct{ Steps []struct{ ID string } }
	ada.do("GET", "/api/labs/yaml-to-process", nil).json(t, &lab)
	step := lab.Steps[0].ID
	if r := ada.do("POST", "/api/sessions/"+j.Session.ID+"/steps/"+step+"/check", map[string]string{"answer": "wrong"}); r.status != 200 {
		t.Fatalf("check: %d %s", r.status, r.body)
	}
	row := waitEvent(t, events, "learner", `"failed":1`, 2*time.Second)
	if !strings.Contains(row, `"yaml-to-process/`+step+`":{"status":"failed"`) {
		t.Fatalf("the board's row after a failed check: %s", row)
	}
	// A raised hand, too.
	if r := ada.do("POST", "/api/sessions/"+j.Session.ID+"/hand", map[string]bool{"raised": true}); r.status != 204 {
		t.Fatalf("hand: %d %s", r.status, r.body)
	}
	waitEvent(t, events, "learner", `"hand":true`, 2*time.Second)

	// A broadcast reaches the learner's page stream and session view.
	learnerEvents := make(chan [2]string, 64)
	go ada.sseAsync(t, "/api/sessions/"+j.Session.ID+"/events", learnerEvents)
	waitEvent(t, learnerEvents, "session", "", 5*time.Second)
	if r := grace.do("POST", "/api/workshops/"+wid+"/broadcast", map[string]string{"message": "Break until 11:00"}); r.status != 204 {
		t.Fatalf("broadcast: %d %s", r.status, r.body)
	}
	waitEvent(t, learnerEvents, "broadcast", "Break until 11:00", 2*time.Second)
	var sv struct {
		Workshop struct{ Broadcast struct{ Message string } }
	}
	ada.do("GET", "/api/sessions/"+j.Session.ID, nil).json(t, &sv)
	if sv.Workshop.Broadcast.Message != "Break until 11:00" {
		t.Fatalf("session view's broadcast: %+v", sv)
	}

	// Watching: the instructor sees what the learner types; keys typed
	// while watching never reach the learner's shell.
	mine, _, err := ada.terminal(t, j.Session.ID, "node01", "")
	if err != nil {
		t.Fatal(err)
	}
	mine.send("echo LEARNER$((40+2))\n")
	mine.waitFor("LEARNER42", 5*time.Second)
	base := "/api/workshops/" + wid + "/learners/" + itoa(adaID) + "/terminal/node01"
	watch, res, err := grace.dialWS(t, base+"?mode=watch", "")
	if err != nil {
		t.Fatalf("watch: %v %v", err, res)
	}
	if hello := watch.waitControl("hello", 5*time.Second); hello.Mode != "watch" {
		t.Fatalf("watch hello: %+v", hello)
	}
	watch.waitFor("LEARNER42", 5*time.Second) // the replay
	watch.send("echo WATCHER$((40+3))\n")
	watch.waitControl("error", 5*time.Second)
	mine.send("echo LIVE$((40+4))\n")
	watch.waitFor("LIVE44", 5*time.Second)
	out := mine.waitFor("LIVE44", 5*time.Second)
	if strings.Contains(out, "WATCHER43") || strings.Contains(watch.buf.String(), "WATCHER43") {
		t.Fatalf("keys typed while watching reached the shell:\n%s", out)
	}

	// Taking over: the instructor's keys reach the shell; the learner's page
	// hears of it, the board shows it, and the learner ends it.
	ctl, _, err := grace.dialWS(t, base+"?mode=control", "")
	if err != nil {
		t.Fatal(err)
	}
	if hello := ctl.waitControl("hello", 5*time.Second); hello.Mode != "control" {
		t.Fatalf("control hello: %+v", hello)
	}
	waitEvent(t, learnerEvents, "takeover", `"active":true`, 2*time.Second)
	ctl.send("echo TAKEN$((40+5))\n")
	mine.waitFor("TAKEN45", 5*time.Second)
	ada.do("GET", "/api/sessions/"+j.Session.ID, nil).json(t, &sv)
	var withTakeover struct {
		Workshop struct{ Takeover *struct{ Instructor string } }
	}
	ada.do("GET", "/api/sessions/"+j.Session.ID, nil).json(t, &withTakeover)
	if withTakeover.Workshop.Takeover == nil || withTakeover.Workshop.Takeover.Instructor != "Test" {
		t.Fatalf("the learner's session view during a take-over: %+v", withTakeover)
	}
	if r := ada.do("POST", "/api/sessions/"+j.Session.ID+"/takeover/end", nil); r.status != 204 {
		t.Fatalf("the learner ends the take-over: %d %s", r.status, r.body)
	}
	if c := ctl.waitControl("closed", 5*time.Second); c.Code == nil || *c.Code != terminal.CloseTakeoverEnded {
		t.Fatalf("the controller's socket closed with %+v, want %d", c, terminal.CloseTakeoverEnded)
	}
	waitEvent(t, learnerEvents, "takeover", `"active":false`, 2*time.Second)
	var audit []server.TakeoverView
	grace.do("GET", "/api/workshops/"+wid+"/takeovers", nil).json(t, &audit)
	if len(audit) != 1 || audit[0].EndedBy == nil || *audit[0].EndedBy != "learner" || audit[0].Learner != "Ada" || audit[0].Node != "node01" {
		t.Fatalf("take-over audit: %+v", audit)
	}

	// Results: the learner and the step, as CSV and JSON.
	csvRes := grace.do("GET", "/api/workshops/"+wid+"/results.csv", nil)
	// A byte-order mark first, so that Excel reads the names as UTF-8.
	csvBody, bom := strings.CutPrefix(string(csvRes.body), "\ufeff")
	if !bom {
		t.Errorf("results.csv does not start with a UTF-8 byte-order mark: % x", csvRes.body[:min(8, len(csvRes.body))])
	}
	recs, err := csv.NewReader(strings.NewReader(csvBody)).ReadAll()
	if err != nil || len(recs) < 2 || recs[0][0] != "learner" {
		t.Fatalf("results.csv: %v\n%s", err, csvRes.body)
	}
	found := false
	for _, rec := range recs[1:] {
		if rec[0] == "Ada" && rec[4] == step && rec[6] == "failed" && rec[9] == "1" {
			found = true
		}
	}
	if !found {
		t.Fatalf("results.csv has no failed row for Ada on %s:\n%s", step, csvRes.body)
	}
	var rj struct{ Results []server.ResultRow }
	grace.do("GET", "/api/workshops/"+wid+"/results.json", nil).json(t, &rj)
	if len(rj.Results) != len(recs)-1 {
		t.Fatalf("results.json has %d rows, the CSV %d", len(rj.Results), len(recs)-1)
	}

	// Reset: a fresh cluster, the first step's progress kept.
	if len(lab.Steps) < 2 {
		t.Fatal("the lab needs two steps")
	}
	// The fake sandbox's nodes answer nothing, so no check passes on it: the
	// first step's pass is recorded as the grader records one (a real
	// cluster's pass is the browser test's).
	if err := e.store.RecordAttempt(ctx, &store.Attempt{LabSessionID: mustUUID(t, j.Session.ID), StepID: step, Kind: store.AttemptSkip, Passed: true}); err != nil {
		t.Fatal(err)
	}
	r = grace.do("POST", "/api/workshops/"+wid+"/learners/"+itoa(adaID)+"/reset", map[string]string{"fromStep": "yaml-to-process/nope"})
	if r.status != 400 || !strings.Contains(r.errorMessage(), "yaml-to-process/"+lab.Steps[1].ID) {
		t.Fatalf("reset from a step that is not one: %d %s", r.status, r.body)
	}
	r = grace.do("POST", "/api/workshops/"+wid+"/learners/"+itoa(adaID)+"/reset", map[string]string{"fromStep": "yaml-to-process/" + lab.Steps[1].ID})
	if r.status != 200 {
		t.Fatalf("reset: %d %s", r.status, r.body)
	}
	var reset server.LearnerRow
	r.json(t, &reset)
	if reset.SessionID == "" || reset.SessionID == j.Session.ID || reset.Cells["yaml-to-process/"+step].Status != store.StepSkipped {
		t.Fatalf("after reset: session %s (was %s), first step %+v; want a new session with the step kept", reset.SessionID, j.Session.ID, reset.Cells["yaml-to-process/"+step])
	}
	old, _ := e.store.LabSession(ctx, mustUUID(t, j.Session.ID))
	if old.State != store.SessionEnded {
		t.Fatalf("the old session is %s after a reset", old.State)
	}

	// Extend everyone, then end: every cluster goes, results stay.
	if r := grace.do("POST", "/api/workshops/"+wid+"/extend", map[string]int{"minutes": 15}); r.status != 200 || !strings.Contains(string(r.body), `"extended":1`) {
		t.Fatalf("extend: %d %s", r.status, r.body)
	}
	if r := grace.do("POST", "/api/workshops/"+wid+"/end", nil); r.status != 200 {
		t.Fatalf("end: %d %s", r.status, r.body)
	}
	waitEvent(t, events, "ended", "", 5*time.Second)
	deadline = time.Now().Add(20 * time.Second)
	for len(fake.Clusters()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("clusters left after the workshop ended: %v", fake.Clusters())
		}
		time.Sleep(100 * time.Millisecond)
	}
	grace.do("GET", "/api/workshops/"+wid+"/results.json", nil).json(t, &rj)
	if len(rj.Results) == 0 {
		t.Fatal("results are gone after the end")
	}
	// Its code was retired: it is answered like a wrong one.
	if r, _ := newClient(t, e.url).join(w.Code, "Late"); r.status != 404 || !strings.Contains(r.errorMessage(), "no open workshop has the code") {
		t.Fatalf("joining an ended workshop: %d %s", r.status, r.body)
	}
}

// A workshop is in Postgres: after a restart its code, learners and board
// are there, and its prepared clusters are found again, still the
// workshop's, without being created anew.
func TestWorkshopSurvivesRestart(t *testing.T) {
	fake := fakesandbox.New()
	cfg := workshopConfig(t)
	e := startServer(t, cfg, fake)
	now := time.Now()
	grace := e.instructor(t, "grace@example.com")
	body := workshopBody("Class", now.Add(-time.Minute), now.Add(time.Hour), 4, true)
	body["prepare"] = 3
	w := grace.createWorkshop(t, body)
	ada := newClient(t, e.url)
	if r, _ := ada.join(w.Code, "Ada"); r.status != 200 {
		t.Fatalf("join: %d %s", r.status, r.body)
	}
	// One seat taken of three prepared: two are kept ready.
	waitPrepared(t, grace, w.ID, 2)
	creates := len(fake.Creates())
	e.stop()

	e2 := startServer(t, cfg, fake)
	grace.base, ada.base = e2.url, e2.url
	var after workshopView
	grace.do("GET", "/api/workshops/"+itoa(w.ID), nil).json(t, &after)
	if after.Code != w.Code || after.Learners != 1 {
		t.Fatalf("after a restart: %+v", after)
	}
	waitPrepared(t, grace, w.ID, 2)
	if n := len(fake.Creates()); n != creates {
		t.Fatalf("%d clusters created after the restart; the prepared ones should have been found again", n-creates)
	}
	var b server.BoardView
	grace.do("GET", "/api/workshops/"+itoa(w.ID)+"/board", nil).json(t, &b)
	if len(b.Learners) != 1 || b.Learners[0].Name != "Ada" || b.Learners[0].SessionID == "" {
		t.Fatalf("the board after a restart: %+v", b.Learners)
	}
	// The guest's cookie still works, for their own session only.
	if me(t, ada).GuestWorkshop != w.ID {
		t.Fatal("the guest is not bound to the workshop after a restart")
	}
}

func waitPrepared(t *testing.T, c *client, id int64, ready int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var v workshopView
		c.do("GET", "/api/workshops/"+itoa(id), nil).json(t, &v)
		if v.Clusters != nil && v.Clusters.Ready == ready && v.Clusters.Creating == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("prepared clusters: %+v, want %d ready", v.Clusters, ready)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// When its time is up a workshop ends by itself: its sessions end, their
// clusters and the prepared ones are deleted, joining is refused.
func TestWorkshopTimeUp(t *testing.T) {
	fake := fakesandbox.New()
	e := startServer(t, workshopConfig(t), fake)
	ctx := context.Background()
	now := time.Now()
	grace := e.instructor(t, "grace@example.com")
	body := workshopBody("Short", now.Add(-time.Minute), now.Add(4*time.Second), 3, true)
	body["prepare"] = 2
	w := grace.createWorkshop(t, body)
	ada := newClient(t, e.url)
	r, j := ada.join(w.Code, "Ada")
	if r.status != 200 {
		t.Fatalf("join: %d %s", r.status, r.body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		sess, err := e.store.LabSession(ctx, mustUUID(t, j.Session.ID))
		if err != nil {
			t.Fatal(err)
		}
		if sess.State == store.SessionEnded && len(fake.Clusters()) == 0 {
			if sess.EndReason == nil || !strings.Contains(*sess.EndReason, "time is up") {
				t.Fatalf("end reason %v", sess.EndReason)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the workshop's end: session %s, clusters %v", sess.State, fake.Clusters())
		}
		time.Sleep(200 * time.Millisecond)
	}
	var v workshopView
	grace.do("GET", "/api/workshops/"+itoa(w.ID), nil).json(t, &v)
	if v.State != store.WorkshopEnded {
		t.Fatalf("state %s after its end", v.State)
	}
	if r, _ := newClient(t, e.url).join(w.Code, "Late"); r.status != 404 || !strings.Contains(r.errorMessage(), "no open workshop has the code") {
		t.Fatalf("join after the end: %d %s", r.status, r.body)
	}
}

// A workshop's lab, done, leads to the workshop's next lab (not the
// catalog's), and the workshop's last lab to none; starting it from there
// keeps it in the workshop.
func TestWorkshopNextLab(t *testing.T) {
	e := startServer(t, workshopConfig(t), fakesandbox.New())
	ctx := context.Background()
	now := time.Now()
	grace := e.instructor(t, "grace@example.com")
	body := workshopBody("Order", now.Add(-time.Minute), now.Add(time.Hour), 3, true)
	body["labs"] = []string{"cgroups", "yaml-to-process"}
	w := grace.createWorkshop(t, body)
	ada := newClient(t, e.url)
	_, j := ada.join(w.Code, "Ada")
	if j.Session == nil || j.Session.LabID != "cgroups" {
		t.Fatalf("join: %+v", j)
	}
	finish := func(id, lab string) {
		var l struct{ Steps []struct{ ID string } }
		ada.do("GET", "/api/labs/"+lab, nil).json(t, &l)
		for _, st := range l.Steps {
			if err := e.store.RecordAttempt(ctx, &store.Attempt{LabSessionID: mustUUID(t, id), StepID: st.ID, Kind: store.AttemptCheck, Passed: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
	finish(j.Session.ID, "cgroups")
	var v struct {
		Summary *struct{ Next *struct{ ID string } }
	}
	ada.do("GET", "/api/sessions/"+j.Session.ID, nil).json(t, &v)
	if v.Summary == nil || v.Summary.Next == nil || v.Summary.Next.ID != "yaml-to-process" {
		t.Fatalf("the end of the workshop's first lab offers %+v, want yaml-to-process", v.Summary)
	}
	_, html := ada.page("/sessions/" + j.Session.ID)
	if !strings.Contains(html, `action="/labs/yaml-to-process/start"`) {
		t.Fatal("the lab page's end does not offer the workshop's next lab")
	}
	ada.do("DELETE", "/api/sessions/"+j.Session.ID, nil)
	r := ada.do("POST", "/api/labs/yaml-to-process/sessions", nil)
	if r.status != 201 {
		t.Fatalf("start the next lab: %d %s", r.status, r.body)
	}
	var next struct{ ID string }
	r.json(t, &next)
	sess, _ := e.store.LabSession(ctx, mustUUID(t, next.ID))
	if sess.WorkshopID == nil || *sess.WorkshopID != w.ID {
		t.Fatal("the next lab's session is not the workshop's")
	}
	finish(next.ID, "yaml-to-process")
	var last struct {
		Summary *struct{ Next *struct{ ID string } }
	}
	ada.do("GET", "/api/sessions/"+next.ID, nil).json(t, &last)
	if last.Summary == nil || last.Summary.Next != nil {
		t.Fatalf("the workshop's last lab offers %+v, want none", last.Summary)
	}
}

// A class joining at once: 12 guests race for 5 seats. Exactly 5 get a
// seat, a session and an account; the 7 others are told it is full and
// leave nothing behind.
func TestWorkshopJoinRush(t *testing.T) {
	e := startServer(t, workshopConfig(t), fakesandbox.New())
	now := time.Now()
	grace := e.instructor(t, "grace@example.com")
	w := grace.createWorkshop(t, workshopBody("Rush", now.Add(-time.Minute), now.Add(time.Hour), 5, true))
	users := countRows(t, e, "users")
	type result struct {
		status int
		msg    string
	}
	results := make(chan result, 12)
	for i := range 12 {
		go func() {
			c := newClient(t, e.url)
			r := c.do("POST", "/api/join", map[string]string{"code": w.Code, "name": "Learner " + strconv.Itoa(i)})
			results <- result{r.status, r.errorMessage()}
		}()
	}
	seated, full := 0, 0
	for range 12 {
		r := <-results
		switch {
		case r.status == 200:
			seated++
		case r.status == 409 && strings.Contains(r.msg, "every seat"):
			full++
		default:
			t.Errorf("a join answered %d %s", r.status, r.msg)
		}
	}
	if seated != 5 || full != 7 {
		t.Fatalf("%d seated and %d told it is full; want 5 and 7", seated, full)
	}
	if n := countRows(t, e, "workshop_learners"); n != 5 {
		t.Fatalf("%d seats taken", n)
	}
	if n := countRows(t, e, "users") - users; n != 5 {
		t.Fatalf("%d guest accounts made, want 5", n)
	}
	if n := countRows(t, e, "lab_sessions"); n != 5 {
		t.Fatalf("%d sessions started, want 5", n)
	}
}

// Taking a workshop's lab again goes on where the learner was: a session
// ended half-way (by the learner, or the server) is followed, on the next
// join, by one of the same lab with its progress, and the board and
// results keep every step passed. Idle, a workshop's session is not ended
// (it hibernates); "extend everyone" moves the workshop's end too; a
// double-clicked guest join makes one guest.
func TestWorkshopProgressKept(t *testing.T) {
	cfg := workshopConfig(t)
	cfg.IdleTimeout = 2 * time.Second
	cfg.HibernateAfter = time.Second
	e := startServer(t, cfg, fakesandbox.New())
	ctx := context.Background()
	now := time.Now()
	grace := e.instructor(t, "grace@example.com")
	body := workshopBody("Again", now.Add(-time.Minute), now.Add(time.Hour), 3, true)
	w := grace.createWorkshop(t, body)
	ada := newClient(t, e.url)
	_, j := ada.join(w.Code, "Ada")
	var lab struct{ Steps []struct{ ID string } }
	ada.do("GET", "/api/labs/yaml-to-process", nil).json(t, &lab)
	for _, st := range lab.Steps[:2] {
		if err := e.store.RecordAttempt(ctx, &store.Attempt{LabSessionID: mustUUID(t, j.Session.ID), StepID: st.ID, Kind: store.AttemptCheck, Passed: true}); err != nil {
			t.Fatal(err)
		}
	}
	// Idle for longer than the idle timeout: still active (hibernated).
	time.Sleep(4 * time.Second)
	if sess, _ := e.store.LabSession(ctx, mustUUID(t, j.Session.ID)); sess.State != store.SessionActive {
		t.Fatalf("a workshop's session idle past the idle timeout: %s (%v)", sess.State, sess.EndReason)
	}
	// Ended half-way; joining again starts the same lab, with its progress.
	ada.do("DELETE", "/api/sessions/"+j.Session.ID, nil)
	r, again := ada.join(w.Code, "Ada")
	if r.status != 200 || again.Session.ID == j.Session.ID || again.Session.LabID != "yaml-to-process" {
		t.Fatalf("joining again after ending half-way: %d %s", r.status, r.body)
	}
	var v struct{ Steps []struct{ ID, Status string } }
	ada.do("GET", "/api/sessions/"+again.Session.ID, nil).json(t, &v)
	if v.Steps[0].Status != store.StepPassed || v.Steps[1].Status != store.StepPassed || v.Steps[2].Status != store.StepPending {
		t.Fatalf("the new session's steps: %+v; want the first two passed", v.Steps)
	}
	// Started again from the lab's own page (the API), not by a join: the
	// same progress, since every start of a workshop's lab carries it.
	ada.do("DELETE", "/api/sessions/"+again.Session.ID, nil)
	r = ada.do("POST", "/api/labs/yaml-to-process/sessions", nil)
	var third struct {
		Workshop *struct{ ID int64 }
		Steps    []struct{ ID, Status string }
	}
	r.json(t, &third)
	if r.status != 201 || third.Workshop == nil || third.Workshop.ID != w.ID {
		t.Fatalf("starting the workshop's lab again from its page: %d %s", r.status, r.body)
	}
	if third.Steps[0].Status != store.StepPassed || third.Steps[1].Status != store.StepPassed || third.Steps[2].Status != store.StepPending {
		t.Fatalf("the session started from the lab's page: steps %+v; want the first two passed", third.Steps)
	}
	var b server.BoardView
	grace.do("GET", "/api/workshops/"+itoa(w.ID)+"/board", nil).json(t, &b)
	if b.Learners[0].Passed != 2 || b.Learners[0].Cells["yaml-to-process/"+lab.Steps[0].ID].Attempts != 1 {
		t.Fatalf("the board after taking the lab again: passed %d, first cell %+v", b.Learners[0].Passed, b.Learners[0].Cells["yaml-to-process/"+lab.Steps[0].ID])
	}

	// Extend everyone: the workshop's end moves with the sessions'.
	var before workshopView
	grace.do("GET", "/api/workshops/"+itoa(w.ID), nil).json(t, &before)
	grace.do("POST", "/api/workshops/"+itoa(w.ID)+"/extend", map[string]int{"minutes": 20})
	got, err := e.store.WorkshopByID(ctx, w.ID)
	if err != nil || got.EndsAt.Sub(now.Add(time.Hour)) < 19*time.Minute {
		t.Fatalf("the workshop ends at %v after extending by 20 min (was %v)", got.EndsAt, now.Add(time.Hour))
	}

	// A double-clicked guest join: two posts of the form from one browser.
	bob := newClient(t, e.url)
	token := bob.formToken("/join/" + w.Code)
	users := countRows(t, e, "users")
	done := make(chan int, 2)
	for range 2 {
		go func() {
			res, _ := bob.postForm("/join/"+w.Code, url.Values{"csrf": {token}, "name": {"Bob"}})
			done <- res.StatusCode
		}()
	}
	for range 2 {
		if st := <-done; st != 200 {
			t.Errorf("a double-clicked join answered %d", st)
		}
	}
	if n := countRows(t, e, "users") - users; n != 1 {
		t.Fatalf("a double-clicked join made %d guests, want 1", n)
	}
	grace.do("GET", "/api/workshops/"+itoa(w.ID), nil).json(t, &before)
	if before.Learners != 2 {
		t.Fatalf("%d learners after Ada and a double-clicked Bob, want 2", before.Learners)
	}
}

// Join codes cannot be found by trying them. New codes carry more than 48
// bits (10 of 31 letters), shown as ABCDE-FGHJK and read however typed.
// Wrong codes are limited per browser: past its limit a browser gets the
// same refusal for every code, the right one too, so the answers tell a
// guesser nothing; but a classmate at the same address (one NAT for the
// room) joins with the right code. A class typing the right code takes
// nothing from any limit.
func TestWorkshopCodeGuessing(t *testing.T) {
	e := startServer(t, workshopConfig(t), fakesandbox.New())
	now := time.Now()
	grace := e.instructor(t, "grace@example.com")
	w := grace.createWorkshop(t, workshopBody("Class", now.Add(-time.Minute), now.Add(time.Hour), 30, true))
	const alphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
	letters := strings.ReplaceAll(w.Code, "-", "")
	if bits := float64(len(letters)) * math.Log2(float64(len(alphabet))); bits < 48 || strings.Trim(letters, alphabet) != "" ||
		len(letters) != 10 || w.Code != letters[:5]+"-"+letters[5:] || !strings.HasSuffix(w.JoinURL, "/join/"+w.Code) {
		t.Errorf("code %q (%.1f bits), join URL %q: want 10 letters of %s (over 48 bits), shown ABCDE-FGHJK", w.Code, bits, w.JoinURL, alphabet)
	}
	typed := w.Code
	if len(letters) == 10 {
		typed = strings.ToLower(letters[:3]) + " " + letters[3:7] + "-" + letters[7:]
	}
	for i := range 25 {
		code := w.Code
		if i == 0 {
			code = typed
		}
		if r, _ := newClient(t, e.url).join(code, "Learner "+strconv.Itoa(i)); r.status != 200 {
			t.Fatalf("right code %q, learner %d: %d %s", code, i, r.status, r.body)
		}
	}
	// One learner's browser (it loaded the join form, as browsers do)
	// types wrong codes.
	guesser := newClient(t, e.url)
	if status, _ := guesser.page("/join"); status != 200 {
		t.Fatalf("the join form: %d", status)
	}
	for i := range 20 {
		r, _ := guesser.join(fmt.Sprintf("ZZZZZ-ZZZ%02d", i), "X")
		switch {
		case i < 10 && r.status != 404:
			t.Errorf("wrong code %d: %d %s, want 404", i, r.status, r.body)
		case i >= 10 && (r.status != 429 || !strings.Contains(r.errorMessage(), "too many wrong join codes")):
			t.Errorf("wrong code %d, past the browser's 10: %d %s, want 429", i, r.status, r.body)
		}
	}
	if r, _ := guesser.join(w.Code, "X"); r.status != 429 {
		t.Errorf("the right code from the guessing browser: %d, want 429 like any other", r.status)
	}
	if status, html := guesser.page("/join/" + w.Code); status != 429 || !strings.Contains(html, "too many wrong join codes") || strings.Contains(html, "Class") {
		t.Errorf("the join page in the guessing browser: %d", status)
	}
	// A classmate at the same address is not held back by it.
	classmate := newClient(t, e.url)
	if status, html := classmate.page("/join/" + w.Code); status != 200 || !strings.Contains(html, "Class") {
		t.Errorf("a classmate's join page: %d", status)
	}
	if r, _ := classmate.join(w.Code, "Lin"); r.status != 200 {
		t.Errorf("a classmate at the guesser's address with the right code: %d %s", r.status, r.body)
	}

	// A 6-character code an older podpath made keeps working while its
	// workshop is open.
	old := grace.createWorkshop(t, workshopBody("Made before", now.Add(-time.Minute), now.Add(time.Hour), 5, true))
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE workshops SET code = 'K7QXM3' WHERE id = $1`, old.ID); err != nil {
		t.Fatal(err)
	}
	var v workshopView
	grace.do("GET", "/api/workshops/"+itoa(old.ID), nil).json(t, &v)
	if v.Code != "K7QXM3" || !strings.HasSuffix(v.JoinURL, "/join/K7QXM3") {
		t.Errorf("an older code is shown as %q, %q", v.Code, v.JoinURL)
	}
	if r, j := newClient(t, e.url).join("k7q-xm3", "Old"); r.status != 200 || j.Workshop.ID != old.ID {
		t.Errorf("joining with an older 6-character code: %d %s", r.status, r.body)
	}
}

// Many /64s of one IPv6 /48 share the /48's budget of wrong codes (an
// IPv6 customer picks /64s at will); another /48 keeps its own.
func TestWorkshopCodeGuessingFromPrefixes(t *testing.T) {
	cfg := workshopConfig(t)
	cfg.TrustedProxies = []string{"127.0.0.1"} // the test is the proxy: X-Forwarded-For is believed
	e := startServer(t, cfg, fakesandbox.New())
	now := time.Now()
	grace := e.instructor(t, "grace@example.com")
	w := grace.createWorkshop(t, workshopBody("Class", now.Add(-time.Minute), now.Add(time.Hour), 5, true))
	join := func(code, from string) response {
		return newClient(t, e.url).do("POST", "/api/join", map[string]string{"code": code, "name": "X"}, "X-Forwarded-For", from)
	}
	refusedAt := -1
	start := time.Now()
	for i := range 260 {
		r := join(fmt.Sprintf("ZZZZZ-%05d", i), fmt.Sprintf("2001:db8:77:%x::1", i))
		if r.status == 429 {
			refusedAt = i
			break
		}
		if r.status != 404 {
			t.Fatalf("wrong code from /64 number %d: %d %s", i, r.status, r.body)
		}
	}
	// The budget is 200 at once, and comes back at 200 a minute while the
	// guesses are sent (each a transaction or two on the limiter's table).
	refill := int(time.Since(start).Seconds() * 200 / 60)
	if refusedAt < 200 || refusedAt > 200+refill {
		t.Fatalf("wrong codes from distinct /64s of one /48: first refused at %d, want 200 (the /48's budget) to %d (what came back in %s)", refusedAt, 200+refill, time.Since(start).Round(time.Millisecond))
	}
	if r := join(w.Code, "2001:db8:77:ffff::9"); r.status != 429 {
		t.Errorf("the right code from another /64 of that /48: %d, want 429", r.status)
	}
	if r := join("ZZZZZ-ZZZZZ", "2001:db8:78::1"); r.status != 404 {
		t.Errorf("a wrong code from another /48: %d, want 404", r.status)
	}
	if r := join(w.Code, "2001:db8:78::2"); r.status != 200 {
		t.Errorf("the right code from another /48: %d %s", r.status, r.body)
	}
}

// A code that opens no workshop now — of a workshop not started yet, ended
// by its instructor (the code is retired), or past its end before the
// server noticed — is answered like a wrong code, naming no workshop, and
// counts against the browser like one.
func TestWorkshopClosedCodeIsAMiss(t *testing.T) {
	cfg := workshopConfig(t)
	cfg.ReapInterval = time.Hour // the workshop ticker must not end the late one first
	e := startServer(t, cfg, fakesandbox.New())
	ctx := context.Background()
	now := time.Now()
	grace := e.instructor(t, "grace@example.com")
	later := grace.createWorkshop(t, workshopBody("Tomorrow's secret class", now.Add(24*time.Hour), now.Add(26*time.Hour), 5, true))
	ended := grace.createWorkshop(t, workshopBody("Yesterday's secret class", now.Add(-time.Minute), now.Add(time.Hour), 5, true))
	late := grace.createWorkshop(t, workshopBody("An overrun secret class", now.Add(-time.Minute), now.Add(time.Hour), 5, true))
	if r := grace.do("POST", "/api/workshops/"+itoa(ended.ID)+"/end", nil); r.status != 200 {
		t.Fatalf("end: %d %s", r.status, r.body)
	}
	var after workshopView
	grace.do("GET", "/api/workshops/"+itoa(ended.ID), nil).json(t, &after)
	if after.Code != "" || after.JoinURL != "" {
		t.Errorf("an ended workshop still shows a code: %q %q", after.Code, after.JoinURL)
	}
	if r := grace.do("POST", "/api/workshops/"+itoa(ended.ID)+"/code", nil); r.status != 410 {
		t.Errorf("rotating an ended workshop's code: %d %s, want 410", r.status, r.body)
	}
	conn, err := pgx.Connect(ctx, e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE workshops SET starts_at = now() - interval '2 hours', ends_at = now() - interval '1 hour' WHERE id = $1`, late.ID); err != nil {
		t.Fatal(err)
	}
	var retired *string
	if err := conn.QueryRow(ctx, `SELECT code FROM workshops WHERE id = $1`, ended.ID).Scan(&retired); err != nil || retired != nil {
		t.Errorf("the ended workshop's code in the database: %v %v, want NULL (retired)", retired, err)
	}

	b := newClient(t, e.url)
	b.page("/join")
	r, _ := b.join("ZZZZZ-ZZZZZ", "X")
	want := strings.ReplaceAll(r.errorMessage(), "ZZZZZ-ZZZZZ", "CODE")
	if r.status != 404 {
		t.Fatalf("a wrong code: %d %s", r.status, r.body)
	}
	tries := 1
	for round := 0; tries < 10; round++ {
		for _, w := range []workshopView{later, ended, late} {
			if tries == 10 {
				break
			}
			tries++
			r, _ := b.join(w.Code, "X")
			if got := strings.ReplaceAll(r.errorMessage(), w.Code, "CODE"); r.status != 404 || got != want || strings.Contains(string(r.body), "secret class") {
				t.Errorf("the code of %q: %d %s; want 404 and the wrong code's answer %q", w.Title, r.status, r.body, want)
			}
		}
	}
	if status, html := newClient(t, e.url).page("/join/" + later.Code); status != 404 || strings.Contains(html, "secret class") {
		t.Errorf("the join page of a class not started: %d, want 404 naming no workshop", status)
	}
	// Ten misses: the browser is refused from now on, whatever it types.
	if r, _ := b.join("ZZZZZ-ZZZZZ", "X"); r.status != 429 {
		t.Errorf("the 11th wrong or closed code of a browser: %d %s, want 429: closed codes count as misses", r.status, r.body)
	}
	if n := countRows(t, e, "workshop_learners"); n != 0 {
		t.Errorf("closed codes took %d seats", n)
	}
}

// The board's row of a learner, as the workshops package computes it: the
// passed count, each pass's time from the pass before it (not from the
// lab's start), the step they are on and the stuck rule by failed checks;
// the results download says the same.
func TestWorkshopBoardRow(t *testing.T) {
	e := startServer(t, workshopConfig(t), fakesandbox.New())
	ctx := context.Background()
	now := time.Now()
	grace := e.instructor(t, "grace@example.com")
	w := grace.createWorkshop(t, workshopBody("Rows", now.Add(-time.Minute), now.Add(time.Hour), 3, true))
	ada := newClient(t, e.url)
	_, j := ada.join(w.Code, "Ada")
	var lab struct{ Steps []struct{ ID string } }
	ada.do("GET", "/api/labs/yaml-to-process", nil).json(t, &lab)
	id := mustUUID(t, j.Session.ID)
	record := func(step string, passed bool) {
		t.Helper()
		if err := e.store.RecordAttempt(ctx, &store.Attempt{LabSessionID: id, StepID: step, Kind: store.AttemptCheck, Passed: passed}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1500 * time.Millisecond) // the first pass comes 1.5 s after the start
	record(lab.Steps[0].ID, true)
	record(lab.Steps[1].ID, true) // the second right after the first
	for range workshops.StuckAttempts {
		record(lab.Steps[2].ID, false)
	}
	var b server.BoardView
	grace.do("GET", "/api/workshops/"+itoa(w.ID)+"/board", nil).json(t, &b)
	if len(b.Learners) != 1 {
		t.Fatalf("board learners: %+v", b.Learners)
	}
	row := b.Learners[0]
	key := func(i int) string { return "yaml-to-process/" + lab.Steps[i].ID }
	first, second := row.Cells[key(0)].TimeToPassSeconds, row.Cells[key(1)].TimeToPassSeconds
	if first == nil || *first < 1 || second == nil || *second != 0 {
		t.Errorf("times to pass: first %v, second %v; want at least 1 s (from the start) and 0 (from the first pass)", ptrInt(first), ptrInt(second))
	}
	if row.Passed != 2 || row.CurrentStep != key(2) || row.Cells[key(2)].Failed != workshops.StuckAttempts || row.Cells[key(2)].Status != store.StepFailed {
		t.Errorf("row: passed %d, on %s, third cell %+v; want 2 passed, on the third step with %d failed checks", row.Passed, row.CurrentStep, row.Cells[key(2)], workshops.StuckAttempts)
	}
	if !row.Stuck || !strings.Contains(row.StuckWhy, strconv.Itoa(workshops.StuckAttempts)) {
		t.Errorf("after %d failed checks the learner is not stuck by them: %v %q", workshops.StuckAttempts, row.Stuck, row.StuckWhy)
	}
	if row.Total == 0 || row.Cells[key(3)] == nil || row.Cells[key(3)].Status != store.StepPending {
		t.Errorf("the fourth step's cell: %+v (total %d); want pending", row.Cells[key(3)], row.Total)
	}
	var res struct {
		Results []server.ResultRow
	}
	grace.do("GET", "/api/workshops/"+itoa(w.ID)+"/results.json", nil).json(t, &res)
	found := 0
	for _, r := range res.Results {
		if r.Lab == "yaml-to-process" && r.Step == lab.Steps[1].ID {
			found++
			if !r.Passed || r.TimeToPassSeconds == nil || *r.TimeToPassSeconds != 0 {
				t.Errorf("results of the second step: %+v", r)
			}
		}
	}
	if found != 1 {
		t.Errorf("the results have %d rows of the second step, want 1", found)
	}
}

func ptrInt(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}
