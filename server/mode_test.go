package server_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/store"
)

// modeSession is what these tests read of a session.
type modeSession struct {
	ID      string
	Mode    string
	Summary *struct {
		Passed, Skipped []struct{ ID, Title string }
		DurationMs      int64
		FinishedAt      time.Time
		Takeaways       []string
		Next            *struct {
			ID    string
			Order int
		}
	}
}

// Challenge mode is chosen at Start, by the API's "mode" or the start form's,
// stored with the session and shown on the pages; its step text has no run
// buttons and its commands behind "show me". A bad mode is a 400 that says
// what to send, and starts nothing. No cluster: the sandbox is a fake.
func TestStartModes(t *testing.T) {
	e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
	c := newClient(t, e.url)
	c.signup("modes@example.com")

	for _, tc := range []struct {
		name, body, message string
	}{
		{"unknown mode", `{"mode": "expert"}`, `mode "expert" is not a mode: send "guided"`},
		{"mode in capitals", `{"mode": "Challenge"}`, `"challenge"`},
		{"mode not a string", `{"mode": 1}`, `field "mode" must be a string`},
		{"unknown field", `{"mode": "challenge", "hints": false}`, `unknown field "hints"`},
	} {
		r := c.do("POST", "/api/labs/yaml-to-process/sessions", tc.body)
		if r.status != 400 || !strings.Contains(r.errorMessage(), tc.message) {
			t.Errorf("%s: %d %s; want 400 with %q", tc.name, r.status, r.body, tc.message)
		}
	}
	if n := countRows(t, e, "lab_sessions"); n != 0 {
		t.Fatalf("refused starts left %d sessions", n)
	}

	r := c.do("POST", "/api/labs/yaml-to-process/sessions", map[string]string{"mode": "challenge"})
	if r.status != 201 {
		t.Fatalf("start in challenge mode: %d %s", r.status, r.body)
	}
	var sess modeSession
	r.json(t, &sess)
	if sess.Mode != "challenge" || sess.Summary != nil {
		t.Errorf("started session: mode %q, summary %+v", sess.Mode, sess.Summary)
	}
	var again modeSession
	c.do("GET", "/api/sessions/"+sess.ID, nil).json(t, &again)
	if again.Mode != "challenge" {
		t.Errorf("read back in mode %q", again.Mode)
	}
	var step struct{ HTML string }
	c.do("GET", "/api/sessions/"+sess.ID+"/steps/stop-scheduler", nil).json(t, &step)
	if strings.Contains(step.HTML, "data-run") || strings.Count(step.HTML, `<details class="show-me"><summary>Show me</summary><pre data-node="controlplane">`) != 2 {
		t.Errorf("challenge step text: want its two commands behind show me and no run marks:\n%s", step.HTML)
	}
	if !strings.Contains(step.HTML, "mv /etc/kubernetes/manifests/kube-scheduler.yaml /root/") {
		t.Errorf("challenge step text lost its command:\n%s", step.HTML)
	}
	c.do("GET", "/api/sessions/"+sess.ID+"/steps/stop-scheduler?lang=zh", nil).json(t, &step)
	if !strings.Contains(step.HTML, "<summary>显示命令</summary>") {
		t.Errorf("Chinese challenge step text has no Chinese show-me:\n%s", step.HTML)
	}
	if _, home := c.page("/"); !strings.Contains(home, `<span class="pill mode" data-mode="challenge">Challenge</span>`) {
		t.Error("the home page does not show the session's mode")
	}
	if _, page := c.page("/sessions/" + sess.ID); !strings.Contains(page, `data-mode="challenge"`) {
		t.Error("the lab page does not show the session's mode")
	}

	// With no body, a start is guided, and its commands have run buttons.
	if r := c.do("DELETE", "/api/sessions/"+sess.ID, nil); r.status != 204 {
		t.Fatalf("end: %d %s", r.status, r.body)
	}
	r = c.do("POST", "/api/labs/yaml-to-process/sessions", nil)
	var guided modeSession
	r.json(t, &guided)
	if r.status != 201 || guided.Mode != "guided" {
		t.Fatalf("start without a body: %d %s", r.status, r.body)
	}
	c.do("GET", "/api/sessions/"+guided.ID+"/steps/stop-scheduler", nil).json(t, &step)
	if strings.Contains(step.HTML, "<details") || strings.Count(step.HTML, `data-run="true"`) != 2 {
		t.Errorf("guided step text: want two runnable commands, nothing hidden:\n%s", step.HTML)
	}

	// The start form: a bad mode is a 400 page; a good one goes through the
	// "you have an active session" page, which keeps it.
	token := c.formToken("/")
	c.noRedirect()
	res, body := c.postForm("/labs/scheduler/start", url.Values{"csrf": {token}, "mode": {"hard"}})
	if res.StatusCode != 400 || !strings.Contains(body, "is not a mode") {
		t.Errorf("form start in mode hard: %d", res.StatusCode)
	}
	res, body = c.postForm("/labs/scheduler/start", url.Values{"csrf": {token}, "mode": {"challenge"}})
	if res.StatusCode != 409 || !strings.Contains(body, `name="mode" value="challenge"`) {
		t.Errorf("form start over an active session: %d, or the conflict page drops the mode", res.StatusCode)
	}
	res, _ = c.postForm("/labs/scheduler/start", url.Values{"csrf": {token}, "mode": {"challenge"}, "replace": {"1"}})
	loc := res.Header.Get("Location")
	if res.StatusCode != 303 || !strings.HasPrefix(loc, "/sessions/") {
		t.Fatalf("form start with replace: %d %s", res.StatusCode, loc)
	}
	var formSess modeSession
	c.do("GET", "/api/sessions/"+strings.TrimPrefix(loc, "/sessions/"), nil).json(t, &formSess)
	if formSess.Mode != "challenge" {
		t.Errorf("form start in challenge mode made a %q session", formSess.Mode)
	}
}

// Once every step is passed or skipped, the session carries the end of the
// lab: the steps passed and skipped, the time from the start to the last
// attempt, the takeaways, and the next lab. Skips count in challenge mode as
// in guided. Attempts are recorded in the store: no cluster.
func TestLabEndSummary(t *testing.T) {
	e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
	c := newClient(t, e.url)
	userID := c.signup("summary@example.com")
	all, _ := labs.Builtin()
	lab := labs.Find(all, "yaml-to-process")
	id := uuid.New()
	sess, err := e.store.CreateLabSession(context.Background(), store.NewLabSession{
		ID: id, UserID: userID, LabID: lab.ID, Mode: store.ModeChallenge, Lifetime: time.Hour, IdleTimeout: 30 * time.Minute,
		SandboxName: "ls-nocluster-" + strings.ReplaceAll(id.String(), "-", "")[:12], Image: "podpath/node:latest", Workers: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	record := func(step, kind string, passed bool) {
		t.Helper()
		a := &store.Attempt{LabSessionID: sess.ID, StepID: step, Kind: kind, Passed: passed, Duration: time.Second}
		if err := e.store.RecordAttempt(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	read := func() modeSession {
		t.Helper()
		var v modeSession
		r := c.do("GET", "/api/sessions/"+sess.ID.String(), nil)
		if r.status != 200 {
			t.Fatalf("session: %d %s", r.status, r.body)
		}
		r.json(t, &v)
		return v
	}
	skipped := map[string]bool{"etcd": true, "kubelet": true, "process": true}
	for i, st := range lab.Steps {
		if i == len(lab.Steps)-1 {
			record(st.ID, store.AttemptCheck, false) // the last step fails first
			if v := read(); v.Summary != nil {
				t.Fatalf("a summary with the last step failed: %+v", v.Summary)
			}
		}
		if skipped[st.ID] {
			record(st.ID, store.AttemptSkip, true)
		} else {
			record(st.ID, store.AttemptCheck, true)
		}
		if v := read(); i < len(lab.Steps)-1 && v.Summary != nil {
			t.Fatalf("a summary after step %d of %d", i+1, len(lab.Steps))
		}
	}
	v := read()
	if v.Summary == nil {
		t.Fatal("no summary once every step is passed or skipped")
	}
	var passed, skips []string
	for _, s := range v.Summary.Passed {
		passed = append(passed, s.ID)
	}
	for _, s := range v.Summary.Skipped {
		skips = append(skips, s.ID)
	}
	if strings.Join(passed, ",") != "stop-scheduler,apply,schedule" || strings.Join(skips, ",") != "etcd,kubelet,process" {
		t.Errorf("passed %v, skipped %v", passed, skips)
	}
	if v.Summary.Skipped[0].Title != lab.Steps[2].Title.In("en") {
		t.Errorf("skipped step titled %q", v.Summary.Skipped[0].Title)
	}
	if d := v.Summary.FinishedAt.Sub(sess.CreatedAt); d < 0 || v.Summary.DurationMs != d.Milliseconds() {
		t.Errorf("duration %d ms, finished %s, started %s", v.Summary.DurationMs, v.Summary.FinishedAt, sess.CreatedAt)
	}
	if strings.Join(v.Summary.Takeaways, "\n") != strings.Join(lab.Takeaways.Lines("en"), "\n") || len(v.Summary.Takeaways) < 2 {
		t.Errorf("takeaways %q", v.Summary.Takeaways)
	}
	if v.Summary.Next == nil || v.Summary.Next.ID != "scheduler" || v.Summary.Next.Order != lab.Order+1 {
		t.Errorf("next lab %+v, want scheduler", v.Summary.Next)
	}
	var zh modeSession
	c.do("GET", "/api/sessions/"+sess.ID.String()+"?lang=zh", nil).json(t, &zh)
	if zh.Summary == nil || strings.Join(zh.Summary.Takeaways, "\n") != strings.Join(lab.Takeaways.Lines("zh"), "\n") {
		t.Errorf("Chinese takeaways %+v", zh.Summary)
	}
	// The lab page holds the next lab's Start, but not the takeaways.
	_, page := c.page("/sessions/" + sess.ID.String())
	if !strings.Contains(page, `action="/labs/scheduler/start"`) {
		t.Error("the lab page has no Start for the next lab")
	}
	if strings.Contains(page, strings.SplitN(lab.Takeaways.In("en"), ":", 2)[0]) {
		t.Error("the lab page carries the takeaways in its HTML")
	}
}

// In challenge mode the path diagram must not point at the fault: a step's
// layers are left out of the session, the step and a challenge lab's
// catalog entry until the step is passed or skipped; guided sessions and
// guided labs keep them. Attempts are recorded in the store: no cluster.
func TestChallengeHidesLayers(t *testing.T) {
	e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
	c := newClient(t, e.url)
	userID := c.signup("layers@example.com")
	all, _ := labs.Builtin()
	type stepLayers struct {
		ID     string
		Status string
		Layers []string
	}
	start := func(labID, mode string) *store.LabSession {
		t.Helper()
		id := uuid.New()
		sess, err := e.store.CreateLabSession(context.Background(), store.NewLabSession{
			ID: id, UserID: userID, LabID: labID, Mode: mode, Lifetime: time.Hour, IdleTimeout: 30 * time.Minute,
			SandboxName: "ls-nocluster-" + strings.ReplaceAll(id.String(), "-", "")[:12], Image: "podpath/node:latest", Workers: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		return sess
	}
	steps := func(sess *store.LabSession) map[string]stepLayers {
		t.Helper()
		var v struct{ Steps []stepLayers }
		c.do("GET", "/api/sessions/"+sess.ID.String(), nil).json(t, &v)
		out := map[string]stepLayers{}
		for _, s := range v.Steps {
			out[s.ID] = s
		}
		return out
	}
	lab := labs.Find(all, "node-not-ready")
	if lab == nil || !lab.Challenge || len(lab.Steps[0].Layers) == 0 {
		t.Fatalf("node-not-ready is not a challenge with layers: %+v", lab)
	}
	first, last := lab.Steps[0].ID, lab.Steps[len(lab.Steps)-1].ID
	sess := start(lab.ID, store.ModeChallenge)
	got := steps(sess)
	if l := got[first].Layers; l == nil || len(l) != 0 {
		t.Errorf("a pending challenge step shows its layers %v (want an empty list)", l)
	}
	var step stepLayers
	c.do("GET", "/api/sessions/"+sess.ID.String()+"/steps/"+first, nil).json(t, &step)
	if step.Layers == nil || len(step.Layers) != 0 {
		t.Errorf("the pending step's view shows layers %v", step.Layers)
	}
	if err := e.store.RecordAttempt(context.Background(), &store.Attempt{LabSessionID: sess.ID, StepID: first, Kind: store.AttemptCheck, Passed: false, Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	if l := steps(sess)[first].Layers; len(l) != 0 {
		t.Errorf("a failed challenge step shows its layers %v", l)
	}
	if err := e.store.RecordAttempt(context.Background(), &store.Attempt{LabSessionID: sess.ID, StepID: first, Kind: store.AttemptCheck, Passed: true, Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	got = steps(sess)
	if strings.Join(got[first].Layers, ",") != strings.Join(lab.Steps[0].Layers, ",") {
		t.Errorf("a passed challenge step shows layers %v, want %v", got[first].Layers, lab.Steps[0].Layers)
	}
	if first != last && len(got[last].Layers) != 0 {
		t.Errorf("the next, pending step shows layers %v", got[last].Layers)
	}

	// The catalog: a challenge lab lists no layers, a guided lab does.
	var list []struct {
		ID    string
		Steps []stepLayers
	}
	c.do("GET", "/api/labs", nil).json(t, &list)
	seen := 0
	for _, l := range list {
		switch l.ID {
		case lab.ID:
			seen++
			if len(l.Steps[0].Layers) != 0 {
				t.Errorf("the catalog shows the challenge's layers %v", l.Steps[0].Layers)
			}
		case "scheduler":
			seen++
			if len(l.Steps[0].Layers) == 0 {
				t.Error("the catalog lost a guided lab's layers")
			}
		}
	}
	if seen != 2 {
		t.Fatalf("the catalog lacks node-not-ready or scheduler: %d of 2", seen)
	}

	// A guided session shows its pending steps' layers.
	if err := e.store.EndLabSession(context.Background(), sess.ID, "user"); err != nil {
		t.Fatal(err)
	}
	guided := start("scheduler", store.ModeGuided)
	for id, s := range steps(guided) {
		if len(s.Layers) == 0 {
			t.Errorf("guided step %s shows no layers", id)
		}
	}
}
