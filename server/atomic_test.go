package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/server"
	"github.com/podpath/podpath/store"
)

// A change and what it announces, or what goes with it, are written in one
// transaction: when Postgres refuses a part (here a trigger, as a full disk
// or a lost connection would), nothing of the change is stored, the user is
// told to try again, and trying again once the cause is gone works.

// sql runs statements on the test's database.
func sql(t *testing.T, e *env, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range stmts {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// refuseEvent makes the outbox refuse rows of one event type, until the
// returned func is called.
func refuseEvent(t *testing.T, e *env, eventType string) (allow func()) {
	t.Helper()
	sql(t, e, `CREATE OR REPLACE FUNCTION refuse_event() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.event_type = TG_ARGV[0] THEN
				RAISE EXCEPTION 'the test refuses % in the outbox', NEW.event_type;
			END IF;
			RETURN NEW;
		END $$`,
		`CREATE TRIGGER refuse_event BEFORE INSERT ON webhook_deliveries FOR EACH ROW EXECUTE FUNCTION refuse_event('`+eventType+`')`)
	return func() { sql(t, e, `DROP TRIGGER refuse_event ON webhook_deliveries`) }
}

func (h *hookReceiver) count(typ string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, ev := range h.got {
		if ev.typ == typ {
			n++
		}
	}
	return n
}

// Ending a workshop and its workshop.ended event: when the outbox refuses
// the event, the end answers an error and the workshop stays open, its
// code and its learner's session with it; ended again once the outbox
// takes it, the event is delivered once.
func TestWorkshopEndedIsWrittenWithTheEnd(t *testing.T) {
	e := startServer(t, workshopConfig(t), fakesandbox.New())
	ctx := context.Background()
	hooks := newHookReceiver(t)
	admin := e.adminClient(t, "root@example.com")
	if r := admin.do("POST", "/api/admin/webhooks", map[string]any{"url": hooks.url, "secret": hookSecret, "events": []string{"workshop.ended"}}); r.status != 201 {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	grace := e.instructor(t, "grace@example.com")
	now := time.Now()
	w := grace.createWorkshop(t, workshopBody("Pods 101", now.Add(-time.Minute), now.Add(time.Hour), 3, true))
	lin := newClient(t, e.url)
	if r, _ := lin.join(w.Code, "Lin"); r.status != 200 {
		t.Fatalf("join: %d %s", r.status, r.body)
	}
	linID := me(t, lin).ID

	allow := refuseEvent(t, e, "workshop.ended")
	r := grace.do("POST", "/api/workshops/"+itoa(w.ID)+"/end", nil)
	if r.status != 503 || !strings.Contains(r.errorMessage(), "nothing changed") || !strings.Contains(r.errorMessage(), "again") {
		t.Errorf("ending while the outbox refuses workshop.ended: %d %s, want 503 saying nothing changed, try again", r.status, r.body)
	}
	var v workshopView
	grace.do("GET", "/api/workshops/"+itoa(w.ID), nil).json(t, &v)
	if v.State != store.WorkshopOpen || v.Code != w.Code {
		t.Errorf("after the refused end the workshop is %s with code %q, want open with %q", v.State, v.Code, w.Code)
	}
	if sess, err := e.store.ActiveLabSession(ctx, linID); err != nil || sess.WorkshopID == nil || *sess.WorkshopID != w.ID {
		t.Errorf("after the refused end the learner's session: %+v %v, want still active", sess, err)
	}
	if r, _ := newClient(t, e.url).join(w.Code, "Late"); r.status != 200 {
		t.Errorf("joining after the refused end: %d %s, want the class still open", r.status, r.body)
	}

	allow()
	if r := grace.do("POST", "/api/workshops/"+itoa(w.ID)+"/end", nil); r.status != 200 {
		t.Fatalf("ending again: %d %s", r.status, r.body)
	}
	hooks.wait(t, "workshop.ended", 10*time.Second)
	time.Sleep(time.Second) // the workshop ticker (every 200 ms) sees it ended too
	if n := hooks.count("workshop.ended"); n != 1 {
		t.Errorf("workshop.ended arrived %d times, want once", n)
	}
}

// passingLab's steps pass on the fake sandbox: each check is a script,
// and every command there exits 0.
func passingLab() *labs.Lab {
	step := func(id string) labs.Step {
		return labs.Step{ID: id, Title: labs.Text{"en": "Step " + id, "zh": "第 " + id + " 步"}, Layers: []string{"kubelet"},
			Checks: []labs.Check{{Name: labs.Text{"en": "it holds", "zh": "成立"},
				Probe: labs.Probe{Script: &labs.ScriptProbe{Node: "controlplane", Script: "true"}}}}}
	}
	return &labs.Lab{ID: "passing", Order: 99, Title: labs.Text{"en": "Passing", "zh": "通过"}, Summary: labs.Text{"en": "Passes", "zh": "通过"},
		Level: "beginner", Minutes: 5, Cluster: labs.Cluster{Workers: 1}, Steps: []labs.Step{step("one"), step("two")}}
}

// A start and its lab.started, a check and its step.passed: when the
// outbox refuses the event, the start or the check fails with a sentence
// that says to try again, and nothing of it is stored (no session, no
// cluster; no attempt, the step not passed).
func TestStartAndCheckAreWrittenWithTheirEvents(t *testing.T) {
	fake := fakesandbox.New()
	e := startServerWith(t, testConfig(testenv.Postgres(t)), fake, []*labs.Lab{passingLab()})
	hooks := newHookReceiver(t)
	admin := e.adminClient(t, "root@example.com")
	if r := admin.do("POST", "/api/admin/webhooks", map[string]any{"url": hooks.url, "secret": hookSecret,
		"events": []string{"lab.started", "step.passed"}}); r.status != 201 {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	ada := newClient(t, e.url)
	ada.signup("ada@example.com")

	allow := refuseEvent(t, e, "lab.started")
	r := ada.do("POST", "/api/labs/passing/sessions", nil)
	if r.status != 503 || !strings.Contains(r.errorMessage(), "start the lab again") {
		t.Errorf("a start while the outbox refuses lab.started: %d %s, want 503 saying to start again", r.status, r.body)
	}
	if n := countRows(t, e, "lab_sessions"); n != 0 {
		t.Errorf("the refused start left %d sessions", n)
	}
	if n := countRows(t, e, "sandboxes"); n != 0 || len(fake.Creates()) != 0 {
		t.Errorf("the refused start left %d sandboxes and made %d clusters", n, len(fake.Creates()))
	}
	r = ada.do("POST", "/api/labs/passing/sessions?lang=zh", nil)
	if r.status != 503 || !strings.Contains(r.errorMessage(), "请稍后重新开始这个实验") {
		t.Errorf("the refusal in Chinese: %d %s", r.status, r.body)
	}
	allow()

	r = ada.do("POST", "/api/labs/passing/sessions", nil)
	if r.status != 201 {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	var sess struct{ ID string }
	r.json(t, &sess)
	waitReady(t, ada, sess.ID)
	hooks.wait(t, "lab.started", 10*time.Second)

	allow = refuseEvent(t, e, "step.passed")
	r = ada.do("POST", "/api/sessions/"+sess.ID+"/steps/one/check", nil)
	if r.status != 503 || !strings.Contains(r.errorMessage(), "does not count yet") {
		t.Errorf("a passing check while the outbox refuses step.passed: %d %s, want 503 saying it does not count yet", r.status, r.body)
	}
	var sv struct{ Steps []struct{ ID, Status string } }
	ada.do("GET", "/api/sessions/"+sess.ID, nil).json(t, &sv)
	if len(sv.Steps) == 0 || sv.Steps[0].Status == store.StepPassed {
		t.Errorf("after the refused check the steps are %+v, want step one not passed", sv.Steps)
	}
	if n := countRows(t, e, "check_attempts"); n != 0 {
		t.Errorf("the refused check left %d attempts", n)
	}
	allow()

	var a server.AttemptView
	if r := ada.do("POST", "/api/sessions/"+sess.ID+"/steps/one/check", nil); r.status != 200 {
		t.Fatalf("check again: %d %s", r.status, r.body)
	} else {
		r.json(t, &a)
	}
	if !a.Passed {
		t.Fatalf("the check again: %+v, want passed", a)
	}
	hooks.wait(t, "step.passed", 10*time.Second)
	time.Sleep(500 * time.Millisecond)
	if n, m := hooks.count("step.passed"), hooks.count("lab.started"); n != 1 || m != 1 {
		t.Errorf("step.passed arrived %d times and lab.started %d, want once each", n, m)
	}
}

// An instructor's reset is one transaction: when the copy of the progress
// it keeps fails, the reset answers an error, and the learner is still in
// their old session, with its cluster and all its progress on the board
// and in the results. Once the cause is gone the reset works.
func TestResetIsAtomic(t *testing.T) {
	fake := fakesandbox.New()
	e := startServer(t, workshopConfig(t), fake)
	ctx := context.Background()
	now := time.Now()
	grace := e.instructor(t, "grace@example.com")
	w := grace.createWorkshop(t, workshopBody("Again", now.Add(-time.Minute), now.Add(time.Hour), 3, true))
	ada := newClient(t, e.url)
	r, j := ada.join(w.Code, "Ada")
	if r.status != 200 {
		t.Fatalf("join: %d %s", r.status, r.body)
	}
	waitReady(t, ada, j.Session.ID)
	adaID := me(t, ada).ID
	old := mustUUID(t, j.Session.ID)
	sb, err := e.store.SandboxOf(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	var lab struct{ Steps []struct{ ID string } }
	ada.do("GET", "/api/labs/yaml-to-process", nil).json(t, &lab)
	for _, st := range lab.Steps[:2] {
		if err := e.store.RecordAttempt(ctx, &store.Attempt{LabSessionID: old, StepID: st.ID, Kind: store.AttemptCheck, Passed: true}); err != nil {
			t.Fatal(err)
		}
	}
	passedOnBoard := func() int {
		t.Helper()
		var b server.BoardView
		grace.do("GET", "/api/workshops/"+itoa(w.ID)+"/board", nil).json(t, &b)
		if len(b.Learners) != 1 {
			t.Fatalf("board: %d learners", len(b.Learners))
		}
		return b.Learners[0].Passed
	}
	passedInResults := func() int {
		t.Helper()
		var res struct{ Results []server.ResultRow }
		grace.do("GET", "/api/workshops/"+itoa(w.ID)+"/results.json", nil).json(t, &res)
		n := 0
		for _, row := range res.Results {
			if row.Passed {
				n++
			}
		}
		return n
	}
	if n := passedOnBoard(); n != 2 {
		t.Fatalf("before the reset the board shows %d steps passed, want 2", n)
	}

	// The copy into the new session fails: any attempt written for a
	// session other than the old one.
	sql(t, e, `CREATE FUNCTION refuse_copy() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.lab_session_id <> '`+old.String()+`' THEN
				RAISE EXCEPTION 'the test refuses copying progress';
			END IF;
			RETURN NEW;
		END $$`,
		`CREATE TRIGGER refuse_copy BEFORE INSERT ON check_attempts FOR EACH ROW EXECUTE FUNCTION refuse_copy()`)
	reset := "/api/workshops/" + itoa(w.ID) + "/learners/" + itoa(adaID) + "/reset"
	r = grace.do("POST", reset, map[string]string{"fromStep": "yaml-to-process/" + lab.Steps[2].ID})
	if r.status != 503 || !strings.Contains(r.errorMessage(), "nothing changed") {
		t.Errorf("a reset whose copy fails: %d %s, want 503 saying nothing changed", r.status, r.body)
	}
	if sess, err := e.store.ActiveLabSession(ctx, adaID); err != nil || sess.ID != old {
		t.Errorf("after the failed reset the learner's active session is %+v (%v), want the old one %s", sess, err, old)
	}
	if n := countRows(t, e, "lab_sessions"); n != 1 {
		t.Errorf("the failed reset left %d sessions, want the 1 old one", n)
	}
	if n, m := passedOnBoard(), passedInResults(); n != 2 || m != 2 {
		t.Errorf("after the failed reset the board shows %d steps passed and the results %d, want 2 and 2", n, m)
	}
	if contains(fake.Deletes(), sb.Name) || !contains(fake.Clusters(), sb.Name) {
		t.Errorf("the failed reset deleted the old cluster %s (deletes %v)", sb.Name, fake.Deletes())
	}
	var sv struct {
		State   string
		Sandbox struct{ State string }
	}
	ada.do("GET", "/api/sessions/"+old.String(), nil).json(t, &sv)
	if sv.State != store.SessionActive || sv.Sandbox.State != store.SandboxReady {
		t.Errorf("after the failed reset the learner's session is %s with its cluster %s, want active and ready", sv.State, sv.Sandbox.State)
	}

	sql(t, e, `DROP TRIGGER refuse_copy ON check_attempts`)
	r = grace.do("POST", reset, map[string]string{"fromStep": "yaml-to-process/" + lab.Steps[2].ID})
	if r.status != 200 {
		t.Fatalf("reset: %d %s", r.status, r.body)
	}
	fresh, err := e.store.ActiveLabSession(ctx, adaID)
	if err != nil || fresh.ID == old {
		t.Fatalf("after the reset the active session is %+v (%v), want a new one", fresh, err)
	}
	if n, m := passedOnBoard(), passedInResults(); n != 2 || m != 2 {
		t.Errorf("after the reset the board shows %d steps passed and the results %d, want the 2 kept", n, m)
	}
	if prev, _ := e.store.LabSession(ctx, old); prev.State != store.SessionEnded {
		t.Errorf("the old session is %s after the reset", prev.State)
	}
	if !contains(fake.Deletes(), sb.Name) {
		t.Errorf("the old cluster %s was not deleted after the reset (deletes %v)", sb.Name, fake.Deletes())
	}
	// A reset from the first step keeps nothing: what a workshop's start
	// carries over (the learner's last session of the lab) is not added to
	// the reset's own copy.
	r = grace.do("POST", reset, map[string]string{"fromStep": "yaml-to-process/" + lab.Steps[0].ID})
	if r.status != 200 {
		t.Fatalf("reset from the first step: %d %s", r.status, r.body)
	}
	if n, m := passedOnBoard(), passedInResults(); n != 0 || m != 0 {
		t.Errorf("after a reset from the first step the board shows %d steps passed and the results %d, want 0 and 0", n, m)
	}
}
