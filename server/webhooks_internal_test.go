package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/podpath/podpath/bus"
	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/replica"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
	"github.com/podpath/podpath/webhooks"
)

// What a check or skip puts in the outbox: step.passed once per passing
// step (not for a failed check, a skip, or a passed step checked again),
// and lab.completed once, when the last step is passed or skipped, with
// the session's totals. No dispatcher runs: the rows are read as written.
func TestAttemptEvents(t *testing.T) {
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.DatabaseURL = testenv.Postgres(t)
	cfg.CapacityCPU, cfg.CapacityMemory = 4, 8192
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	lab := testLab("three", 1, "a", "b", "c")
	one := testLab("one", 2, "x")
	track := &labs.Track{ID: "both", Title: labs.Text{"en": "Both", "zh": "两个"}, Labs: []string{"three", "one"}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rep := replica.New(st, "test", 0, log)
	b := bus.New(st, rep.ID.String(), log)
	sessions := session.NewSessions(session.Config{}, session.Deps{Store: st, Sandboxes: fakesandbox.New(), Labs: []*labs.Lab{lab, one}, Log: log}, b, rep)
	s, err := New(cfg, Deps{Store: st, Sessions: sessions, Hooks: webhooks.New(st, nil, log, webhooks.Options{}), Bus: b, Replica: rep, Labs: []*labs.Lab{lab, one}, Tracks: []*labs.Track{track}, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.CreateUser(ctx, "ada@example.com", "Ada", "x", store.RoleLearner)
	if err != nil {
		t.Fatal(err)
	}
	hook, err := st.CreateWebhook(ctx, "http://127.0.0.1:1/", "0123456789abcdef", webhooks.Events, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.New()
	sess, err := st.CreateLabSession(ctx, store.NewLabSession{ID: id, UserID: u.ID, LabID: "three", Lifetime: time.Hour, IdleTimeout: time.Hour,
		SandboxName: "ls-test-" + id.String()[:8], Image: "podpath/node:latest", Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	attempt := func(step, kind string, passed bool) {
		t.Helper()
		a := &store.Attempt{LabSessionID: id, StepID: step, Kind: kind, Passed: passed}
		if err := st.RecordAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
		if err := s.attempted(ctx, sess, a); err != nil {
			t.Fatal(err)
		}
	}
	types := func() []string {
		t.Helper()
		list, err := st.WebhookDeliveries(ctx, hook.ID, 100)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for i := len(list) - 1; i >= 0; i-- {
			out = append(out, list[i].EventType)
		}
		return out
	}
	attempt("a", store.AttemptCheck, false)
	attempt("a", store.AttemptCheck, true)
	attempt("a", store.AttemptCheck, true) // checked again: nothing new
	attempt("b", store.AttemptSkip, true)  // a skip is no step.passed
	if got := types(); len(got) != 1 || got[0] != webhooks.StepPassed {
		t.Fatalf("before the last step: %v, want one step.passed", got)
	}
	attempt("c", store.AttemptCheck, true) // the last step: lab.completed, counting 5 attempts
	attempt("c", store.AttemptCheck, true) // after the end: nothing new
	got := types()
	want := []string{webhooks.StepPassed, webhooks.StepPassed, webhooks.LabCompleted}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("outbox: %v, want %v", got, want)
	}
	list, _ := st.WebhookDeliveries(ctx, hook.ID, 100)
	var first, done struct {
		Type string
		Data json.RawMessage
	}
	json.Unmarshal(list[2].Body, &first)
	json.Unmarshal(list[0].Body, &done)
	var passed webhooks.StepPassedData
	json.Unmarshal(first.Data, &passed)
	if passed.StepID != "a" || passed.Attempts != 2 || passed.User.Email != "ada@example.com" || passed.SessionID != id.String() || passed.LabID != "three" {
		t.Errorf("step.passed: %s", first.Data)
	}
	var completed webhooks.LabCompletedData
	json.Unmarshal(done.Data, &completed)
	if completed.Attempts != 5 || completed.Skips != 1 || completed.User.ID != u.ID || completed.CompletedAt.IsZero() || completed.TimeSpentSeconds < 0 {
		t.Errorf("lab.completed: %s", done.Data)
	}

	// The track's other lab, twice: track.completed once, with the
	// first completion's time.
	for range 2 {
		st.EndLabSession(ctx, sess.ID, "ended")
		id = uuid.New()
		sess, err = st.CreateLabSession(ctx, store.NewLabSession{ID: id, UserID: u.ID, LabID: "one", Lifetime: time.Hour, IdleTimeout: time.Hour,
			SandboxName: "ls-test-" + id.String()[:8], Image: "podpath/node:latest", Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		attempt("x", store.AttemptCheck, true)
	}
	got = types()
	want = []string{webhooks.StepPassed, webhooks.StepPassed, webhooks.LabCompleted, webhooks.StepPassed, webhooks.LabCompleted, webhooks.TrackCompleted, webhooks.StepPassed, webhooks.LabCompleted}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("outbox after the track's labs: %v, want %v", got, want)
	}
	list, _ = st.WebhookDeliveries(ctx, hook.ID, 100)
	var tc struct{ Data webhooks.TrackCompletedData }
	json.Unmarshal(list[2].Body, &tc)
	if tc.Data.TrackID != "both" || tc.Data.User.ID != u.ID || tc.Data.CompletedAt.IsZero() {
		t.Errorf("track.completed: %s", list[2].Body)
	}
}
