package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
)

type countdownView struct {
	ID                 string
	State              string
	ExpiresAt          time.Time
	IdleDeadline       time.Time
	EndsAt             time.Time
	EndsBy             string
	IdleTimeoutSeconds int
	Extensions         int
}

// The lab page's countdown is the session's hard end, which says what it
// is (its lifetime, or the class's end) and moves only when extended; the
// idle deadline is the latest activity the server saw, fresher than
// Postgres, so a reload does not jump. A workshop's session ends with the
// class: its learner cannot extend it past that.
func TestCountdown(t *testing.T) {
	cfg := testConfig(testenv.Postgres(t))
	cfg.ReapInterval = time.Hour // activity stays in memory: the view must read it there
	e := startServer(t, cfg, fakesandbox.New())
	ctx := context.Background()

	ada := newClient(t, e.url)
	ada.signup("ada-countdown@example.com")
	r := ada.do("POST", "/api/labs/yaml-to-process/sessions", nil)
	if r.status != 201 {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	var v countdownView
	r.json(t, &v)
	if v.EndsBy != "lifetime" || !v.EndsAt.Equal(v.ExpiresAt) || v.IdleTimeoutSeconds != int(cfg.IdleTimeout.Seconds()) {
		t.Errorf("a learner's own session: ends %s by %q (expires %s), idle timeout %d s", v.EndsAt, v.EndsBy, v.ExpiresAt, v.IdleTimeoutSeconds)
	}
	time.Sleep(1100 * time.Millisecond)
	if r := ada.do("POST", "/api/sessions/"+v.ID+"/touch", nil); r.status != 204 {
		t.Fatalf("touch: %d %s", r.status, r.body)
	}
	var after countdownView
	ada.do("GET", "/api/sessions/"+v.ID, nil).json(t, &after)
	if after.IdleDeadline.Sub(v.IdleDeadline) < time.Second {
		t.Errorf("the idle deadline did not follow the activity: %s, then %s", v.IdleDeadline, after.IdleDeadline)
	}
	stored, err := e.store.LabSession(ctx, mustUUID(t, v.ID))
	if err != nil {
		t.Fatal(err)
	}
	if !after.IdleDeadline.After(stored.LastActivityAt.Add(cfg.IdleTimeout)) {
		t.Errorf("the idle deadline %s is Postgres's (%s + idle), not the engine's fresher one", after.IdleDeadline, stored.LastActivityAt)
	}
	if !after.EndsAt.Equal(v.EndsAt) {
		t.Errorf("activity moved the hard end: %s, then %s", v.EndsAt, after.EndsAt)
	}
	var ext countdownView
	if r := ada.do("POST", "/api/sessions/"+v.ID+"/extend", nil); r.status != 200 {
		t.Fatalf("extend: %d %s", r.status, r.body)
	} else {
		r.json(t, &ext)
	}
	if got := ext.EndsAt.Sub(v.EndsAt); got != cfg.Extension || ext.EndsBy != "lifetime" {
		t.Errorf("extend moved the end by %s (by %q), want %s", got, ext.EndsBy, cfg.Extension)
	}
	ada.do("DELETE", "/api/sessions/"+v.ID, nil)
	if r := ada.do("POST", "/api/sessions/"+v.ID+"/touch", nil); r.status != 410 {
		t.Errorf("touch of an ended session: %d %s", r.status, r.body)
	}

	// A workshop's learner: the class's end, no idle end, no extend.
	now := time.Now()
	grace := e.instructor(t, "grace-countdown@example.com")
	classEnd := now.Add(50 * time.Minute).Truncate(time.Second)
	w := grace.createWorkshop(t, workshopBody("Countdown", now.Add(-time.Minute), classEnd, 3, true))
	bo := newClient(t, e.url)
	r, j := bo.join(w.Code, "Bo")
	if r.status != 200 || j.Session == nil {
		t.Fatalf("join: %d %s", r.status, r.body)
	}
	var ws countdownView
	bo.do("GET", "/api/sessions/"+j.Session.ID, nil).json(t, &ws)
	if ws.EndsBy != "class" || !ws.EndsAt.Equal(classEnd) || ws.IdleTimeoutSeconds != 0 {
		t.Errorf("a workshop's session: ends %s by %q, want %s by class; idle timeout %d s", ws.EndsAt, ws.EndsBy, classEnd, ws.IdleTimeoutSeconds)
	}
	if r := bo.do("POST", "/api/sessions/"+j.Session.ID+"/extend", nil); r.status != 409 || !strings.Contains(r.errorMessage(), "ends with the class") {
		t.Errorf("a workshop learner's extend: %d %s", r.status, r.body)
	}
	// The instructor's extension moves the class's end, and the countdown with it.
	if r := grace.do("POST", "/api/workshops/"+itoa(w.ID)+"/extend", map[string]int{"minutes": 10}); r.status != 200 {
		t.Fatalf("extend the workshop: %d %s", r.status, r.body)
	}
	var moved countdownView
	bo.do("GET", "/api/sessions/"+j.Session.ID, nil).json(t, &moved)
	if got := moved.EndsAt.Sub(ws.EndsAt); got != 10*time.Minute || moved.EndsBy != "class" {
		t.Errorf("after the class was extended by 10 min its session ends %s later (by %q)", got, moved.EndsBy)
	}
}
