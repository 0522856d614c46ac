package server_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/store"
)

// trackJSON is what these tests read of GET /api/tracks.
type trackJSON struct {
	ID, Title, Description string
	Labs                   []struct {
		ID, Title             string
		Completed, InProgress bool
	}
	Completed, Total int
	Next             string
}

// GET /api/tracks lists the built-in track with its labs in order, for
// anyone; signed in, each lab carries the learner's progress: in progress
// with an active session or an attempt, completed once a session of it has
// every step passed or skipped, and next moves on. The home page shows the
// same, with a button that starts the next lab. No cluster: the sessions and
// attempts are made in the store, the sandbox is a fake.
func TestTracksProgress(t *testing.T) {
	e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
	ctx := context.Background()
	anon := newClient(t, e.url)
	tracks := func(c *client, query string) trackJSON {
		t.Helper()
		r := c.do("GET", "/api/tracks"+query, nil)
		var out []trackJSON
		r.json(t, &out)
		// The path, then the troubleshooting challenges.
		if r.status != 200 || len(out) != 2 || out[1].ID != "troubleshooting" || out[1].Total < 6 {
			t.Fatalf("GET /api/tracks: %d %s", r.status, r.body)
		}
		var one trackJSON
		c.do("GET", "/api/tracks/"+out[0].ID+query, nil).json(t, &one)
		if one.ID != out[0].ID || one.Completed != out[0].Completed || one.Next != out[0].Next || len(one.Labs) != len(out[0].Labs) {
			t.Errorf("GET /api/tracks/%s %+v differs from the list's %+v", out[0].ID, one, out[0])
		}
		return out[0]
	}
	state := func(tr trackJSON) string {
		var s []string
		for _, l := range tr.Labs {
			switch {
			case l.Completed:
				s = append(s, l.ID+":done")
			case l.InProgress:
				s = append(s, l.ID+":started")
			}
		}
		return strings.Join(s, " ")
	}

	tr := tracks(anon, "")
	if tr.ID != "from-yaml-to-process" || tr.Title != "From YAML to a process" || !strings.Contains(tr.Description, "scheduler") ||
		tr.Total != 14 || len(tr.Labs) != 14 || tr.Completed != 0 || tr.Next != "yaml-to-process" || state(tr) != "" {
		t.Fatalf("anonymous track: %+v", tr)
	}
	if tr.Labs[0].ID != "yaml-to-process" || tr.Labs[1].ID != "scheduler" || tr.Labs[13].ID != "be-the-kubelet" || tr.Labs[1].Title == "" {
		t.Errorf("labs out of order: %+v", tr.Labs)
	}
	if zh := tracks(anon, "?lang=zh"); zh.Title != "从 YAML 到进程" || !strings.Contains(zh.Description, "调度器") {
		t.Errorf("in Chinese: %q %q", zh.Title, zh.Description)
	}
	if r := anon.do("GET", "/api/tracks/no-such-track", nil); r.status != 404 || !strings.Contains(r.errorMessage(), `no track "no-such-track"; GET /api/tracks lists them`) {
		t.Errorf("unknown track: %d %s", r.status, r.body)
	}
	schedulerTitle := tr.Labs[1].Title

	c := newClient(t, e.url)
	uid := c.signup("tracks@example.com")
	other := newClient(t, e.url)
	other.signup("other@example.com")
	if tr := tracks(c, ""); tr.Completed != 0 || tr.Next != "yaml-to-process" || state(tr) != "" {
		t.Errorf("new learner: %+v", tr)
	}

	// An active session: in progress.
	var lab struct{ Steps []struct{ ID string } }
	c.do("GET", "/api/labs/yaml-to-process", nil).json(t, &lab)
	sess := e.labSession(t, uid, "yaml-to-process")
	if s := state(tracks(c, "")); s != "yaml-to-process:started" {
		t.Errorf("with an active session: %q", s)
	}
	// Every step passed but the last, which fails: still in progress.
	for i, st := range lab.Steps {
		if err := e.store.RecordAttempt(ctx, &store.Attempt{LabSessionID: sess.ID, StepID: st.ID, Kind: store.AttemptCheck, Passed: i < len(lab.Steps)-1}); err != nil {
			t.Fatal(err)
		}
	}
	if tr := tracks(c, ""); state(tr) != "yaml-to-process:started" || tr.Completed != 0 || tr.Next != "yaml-to-process" {
		t.Errorf("a step failed: %+v", tr)
	}
	// The last step skipped: completed, and next is the scheduler lab.
	last := lab.Steps[len(lab.Steps)-1].ID
	if err := e.store.RecordAttempt(ctx, &store.Attempt{LabSessionID: sess.ID, StepID: last, Kind: store.AttemptSkip, Passed: true}); err != nil {
		t.Fatal(err)
	}
	if tr := tracks(c, ""); state(tr) != "yaml-to-process:done" || tr.Completed != 1 || tr.Next != "scheduler" {
		t.Errorf("lab completed: %+v", tr)
	}
	// Ending the session keeps it completed.
	if err := e.store.EndLabSession(ctx, sess.ID, "ended by the learner"); err != nil {
		t.Fatal(err)
	}
	if tr := tracks(c, ""); state(tr) != "yaml-to-process:done" || tr.Next != "scheduler" {
		t.Errorf("after the end: %+v", tr)
	}
	// Someone else's progress is theirs.
	if tr := tracks(other, ""); tr.Completed != 0 || state(tr) != "" {
		t.Errorf("another learner: %+v", tr)
	}

	// The home page: the track, its progress, and a button that starts
	// the next lab as the lab list's Start does.
	_, home := c.page("/")
	section := regexp.MustCompile(`(?s)<section class="tracks".*?</section>`).FindString(home)
	for _, want := range []string{
		`<li class="track-card" data-track="from-yaml-to-process">`, "<h3>From YAML to a process</h3>",
		`<progress max="14" value="1"`, "1 of 14 labs done",
		`<form method="post" action="/labs/scheduler/start" class="start-form"><input type="hidden" name="csrf" value="`,
		`name="mode" value="guided">Next: ` + schedulerTitle + `</button>`,
	} {
		if !strings.Contains(section, want) {
			t.Errorf("home page's tracks lack %q:\n%s", want, section)
		}
	}
	if i, j := strings.Index(home, `class="tracks"`), strings.Index(home, `class="labs"`); i < 0 || j < i {
		t.Errorf("the tracks are not above the lab list (%d, %d)", i, j)
	}
	if _, zh := c.page("/?lang=zh"); !strings.Contains(zh, "已完成 1/14 个实验") || !strings.Contains(zh, "学习路线") {
		t.Errorf("Chinese home page lacks the track's progress")
	}
	// The button starts the lab (the fake sandbox needs no cluster).
	token := csrfField.FindStringSubmatch(section)[1]
	c.noRedirect()
	res, _ := c.postForm("/labs/scheduler/start", map[string][]string{"csrf": {token}, "mode": {"guided"}})
	if res.StatusCode != 303 || !strings.HasPrefix(res.Header.Get("Location"), "/sessions/") {
		t.Fatalf("start from the track: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	// With a session of the next lab, the button resumes it (in English:
	// the page in Chinese set the lang cookie).
	_, home = c.page("/?lang=en")
	section = regexp.MustCompile(`(?s)<section class="tracks".*?</section>`).FindString(home)
	if !strings.Contains(section, `<a class="button track-next" href="`+res.Header.Get("Location")+`">Next: `+schedulerTitle+`</a>`) {
		t.Errorf("the track does not resume the next lab's session:\n%s", section)
	}
	if tr := tracks(c, ""); state(tr) != "yaml-to-process:done scheduler:started" {
		t.Errorf("after starting the next lab: %q", state(tr))
	}

	// Signed out: the same track with nothing done, and the button signs in.
	_, home = anon.page("/")
	// The troubleshooting track's button starts its first challenge as one.
	if !strings.Contains(section, `<li class="track-card" data-track="troubleshooting">`) || !strings.Contains(section, `action="/labs/node-not-ready/start"`) || !regexp.MustCompile(`name="mode" value="challenge">Next: node01 will not come back</button>`).MatchString(section) {
		t.Errorf("home page's troubleshooting track:\n%s", section)
	}
	if !strings.Contains(home, "0 of 14 labs done") || !strings.Contains(home, `<a class="button track-next" href="/login?next=/">Next: From YAML to a process</a>`) {
		t.Errorf("signed-out home page's tracks:\n%s", regexp.MustCompile(`(?s)<section class="tracks".*?</section>`).FindString(home))
	}
}
