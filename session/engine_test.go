package session_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
)

// These tests run the engine on a real Postgres with a sandbox that fails
// on cue (internal/fakesandbox). The real-cluster path is proven by
// server.TestLabSession and the sandbox tests.

var testLab = &labs.Lab{ID: "t", Cluster: labs.Cluster{Workers: 1}, Steps: []labs.Step{{ID: "one"}}}

// bigLab asks for workers of 4 GiB (cluster.worker).
var bigLab = &labs.Lab{ID: "big", Cluster: labs.Cluster{Workers: 1, Worker: labs.NodeSize{Memory: "4Gi"}}, Steps: []labs.Step{{ID: "one"}}}

// valuesLab draws a name per session and uses it in its setup and a check.
var valuesLab = &labs.Lab{ID: "v", Cluster: labs.Cluster{Workers: 1},
	Values: []labs.Value{{Name: "app", Word: 8}},
	Setup:  []labs.Action{{Run: "kubectl create deployment {{ .Values.app }} --image=x"}},
	Steps: []labs.Step{{ID: "one", Checks: []labs.Check{{Name: labs.Text{"en": "c"},
		Probe: labs.Probe{Command: &labs.CommandProbe{Node: "controlplane", Run: "echo {{ .Values.app }}"}}}}}}}

type rig struct {
	t *testing.T
	// sandboxes is what the engine runs on: fake unless a test wraps it.
	sandboxes session.Sandboxes
	db        string
	store     *store.Store
	fake      *fakesandbox.Fake
	cfg       session.Config
	eng       *session.Engine
	stop      context.CancelFunc
}

func newRig(t *testing.T) *rig {
	t.Helper()
	db := testenv.Postgres(t)
	ctx := context.Background()
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, db: db, store: st, fake: fakesandbox.New(), cfg: session.Config{
		NodeImage: "img", CapacityCPU: 4, CapacityMemory: 8192, ProvisionConcurrency: 2,
		IdleTimeout: time.Hour, MaxLifetime: time.Hour, HibernateAfter: 30 * time.Minute, WarnBefore: time.Minute,
		ReapInterval: 50 * time.Millisecond, HealthInterval: 50 * time.Millisecond,
	}}
	return r
}

// open starts an engine (again) on the rig's database and fake.
func (r *rig) open() *session.Engine {
	r.t.Helper()
	if r.eng != nil {
		r.close()
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("PODPATH_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	sb := r.sandboxes
	if sb == nil {
		sb = r.fake
	}
	r.eng = session.New(r.cfg, session.Deps{Store: r.store, Sandboxes: sb, Labs: []*labs.Lab{testLab, valuesLab, bigLab}, Log: log})
	if err := r.eng.Open(context.Background()); err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go r.eng.Run(ctx)
	r.t.Cleanup(r.close)
	return r.eng
}

func (r *rig) close() {
	if r.eng == nil {
		return
	}
	r.stop()
	r.eng.Close()
	r.eng = nil
}

var userN int

func (r *rig) user() int64 {
	r.t.Helper()
	userN++
	u, err := r.store.CreateUser(context.Background(), fmt.Sprintf("u%d-%d@example.com", userN, time.Now().UnixNano()), "U", "x", store.RoleLearner)
	if err != nil {
		r.t.Fatal(err)
	}
	return u.ID
}

func (r *rig) start() *store.LabSession {
	r.t.Helper()
	s, err := r.eng.Start(context.Background(), r.user(), testLab)
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

func (r *rig) sandbox(s *store.LabSession) *store.Sandbox {
	r.t.Helper()
	sb, err := r.store.SandboxOf(context.Background(), s.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	return sb
}

// waitState waits until the session's sandbox has state in Postgres.
func (r *rig) waitState(s *store.LabSession, state string) *store.Sandbox {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		sb := r.sandbox(s)
		if sb.State == state {
			return sb
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("sandbox %s is %s (%v), want %s", sb.Name, sb.State, sb.Error, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *rig) session(s *store.LabSession) *store.LabSession {
	r.t.Helper()
	fresh, err := r.store.LabSession(context.Background(), s.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	return fresh
}

func eventually(t *testing.T, what string, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestEndWhileQueuedAndWhileCreating(t *testing.T) {
	r := newRig(t)
	r.cfg.ProvisionConcurrency = 1
	eng := r.open()
	r.fake.Hold()

	creating := r.start()
	eventually(t, "the first create begins", func() bool { return len(r.fake.Creates()) == 1 })
	queued := r.start()
	eventually(t, "the second waits in the queue", func() bool { return eng.Usage().Queued == 1 })

	// End the queued one: it never gets a cluster and leaves the queue.
	if err := eng.End(context.Background(), r.session(queued), "ended by the learner"); err != nil {
		t.Fatal(err)
	}
	r.waitState(queued, store.SandboxDeleted)
	if u := eng.Usage(); u.Queued != 0 {
		t.Errorf("after ending the queued session: %+v", u)
	}

	// End the one being created: End returns while kind still works, and
	// once the create returns its cluster is deleted and its room freed.
	done := make(chan error, 1)
	go func() { done <- eng.End(context.Background(), r.session(creating), "ended by the learner") }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("End waited for the create")
	}
	if s := r.session(creating); s.State != store.SessionEnded {
		t.Errorf("session after End: %s", s.State)
	}
	r.fake.Release()
	r.waitState(creating, store.SandboxDeleted)
	eventually(t, "no cluster and no room held", func() bool {
		u := eng.Usage()
		return len(r.fake.Clusters()) == 0 && u.Running == 0 && u.Hibernated == 0 && u.Creating == 0
	})
	time.Sleep(300 * time.Millisecond) // provisioning would have written ready by now
	if sb := r.sandbox(creating); sb.State != store.SandboxDeleted {
		t.Errorf("the ended session's sandbox went back to %s", sb.State)
	}
	if creates := r.fake.Creates(); len(creates) != 1 {
		t.Errorf("creates: %v, want only the first (the queued one never starts)", creates)
	}

	// Start and end in a loop: nothing piles up, and the queue still moves.
	for range 5 {
		s := r.start()
		if err := eng.End(context.Background(), r.session(s), "ended by the learner"); err != nil {
			t.Fatal(err)
		}
	}
	last := r.start()
	r.waitState(last, store.SandboxReady)
	eventually(t, "only the last cluster is left", func() bool {
		c := r.fake.Clusters()
		return len(c) == 1 && c[0] == r.sandbox(last).Name && eng.Usage().Running == 1
	})
}

func TestOpenWithDockerDownChangesNothing(t *testing.T) {
	r := newRig(t)
	r.open()
	ready := r.start()
	r.waitState(ready, store.SandboxReady)
	r.close()

	r.fake.SetDown(true)
	eng := session.New(r.cfg, session.Deps{Store: r.store, Sandboxes: r.fake, Labs: []*labs.Lab{testLab}, Log: slog.New(slog.DiscardHandler)})
	err := eng.Open(context.Background())
	if !errors.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "Docker does not answer") || !strings.Contains(err.Error(), "start dockerd") {
		t.Fatalf("Open with Docker down: %v", err)
	}
	if _, err := eng.Start(context.Background(), r.user(), testLab); !errors.Is(err, errs.Unavailable) {
		t.Errorf("Start before Open succeeded: %v", err)
	}
	if sb := r.sandbox(ready); sb.State != store.SandboxReady {
		t.Errorf("Docker down at start-up marked the sandbox %s", sb.State)
	}
	r.fake.SetDown(false)
	if err := eng.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if sb := r.sandbox(ready); sb.State != store.SandboxReady || len(r.fake.Deletes()) != 0 {
		t.Errorf("after Docker came back: %s, deletes %v", sb.State, r.fake.Deletes())
	}
	if st, _ := eng.State(ready.ID); st != store.SandboxReady {
		t.Errorf("engine state: %s", st)
	}
}

func TestDeadNodesFailAndRetryWorks(t *testing.T) {
	r := newRig(t)
	eng := r.open()
	s := r.start()
	sb := r.waitState(s, store.SandboxReady)
	r.fake.SetNodeState(sb.Name, "node01", "exited")
	failed := r.waitState(s, store.SandboxFailed)
	if failed.Error == nil || !strings.Contains(*failed.Error, "node01 is exited") || !strings.Contains(*failed.Error, "Retry") {
		t.Errorf("failure message: %v", failed.Error)
	}
	if u := eng.Usage(); u.Running != 0 {
		t.Errorf("a dead cluster still holds room: %+v", u)
	}

	// Two Retry presses at once: one provisions, the other is a conflict.
	r.fake.Hold()
	var wg sync.WaitGroup
	results := make([]error, 2)
	for i := range results {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = eng.Retry(context.Background(), r.session(s)) }()
	}
	wg.Wait()
	ok, conflict := 0, 0
	for _, err := range results {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, errs.Conflict):
			conflict++
		default:
			t.Errorf("retry: %v", err)
		}
	}
	if ok != 1 || conflict != 1 {
		t.Errorf("concurrent retries: %v", results)
	}
	r.fake.Release()
	r.waitState(s, store.SandboxReady)
	if c := r.fake.Creates(); len(c) != 2 {
		t.Errorf("creates after one retry: %v", c)
	}
	if u := eng.Usage(); u.Running != 1 {
		t.Errorf("room after the retry: %+v", u)
	}

	// A cluster deleted behind podpath's back fails the same way.
	r.fake.Delete(context.Background(), sb.Name)
	failed = r.waitState(s, store.SandboxFailed)
	if !strings.Contains(*failed.Error, "disappeared") {
		t.Errorf("vanished cluster: %v", *failed.Error)
	}
	if err := eng.Retry(context.Background(), r.session(s)); err != nil {
		t.Fatal(err)
	}
	r.waitState(s, store.SandboxReady)
}

func TestStateWritesAreRetried(t *testing.T) {
	r := newRig(t)
	eng := r.open()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, r.db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Postgres refuses every sandbox update until the trigger goes.
	if _, err := conn.Exec(ctx, `
		CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'blip'; END $$;
		CREATE TRIGGER blip BEFORE UPDATE ON sandboxes FOR EACH ROW EXECUTE FUNCTION refuse();`); err != nil {
		t.Fatal(err)
	}
	s := r.start()
	eventually(t, "the cluster is made", func() bool { return len(r.fake.Clusters()) == 1 })
	eventually(t, "the engine knows it is ready", func() bool { st, _ := eng.State(s.ID); return st == store.SandboxReady })
	time.Sleep(700 * time.Millisecond) // past the quick retries
	if sb := r.sandbox(s); sb.State == store.SandboxReady {
		t.Fatal("the trigger did not refuse the write")
	}
	if _, err := conn.Exec(ctx, `DROP TRIGGER blip ON sandboxes`); err != nil {
		t.Fatal(err)
	}
	r.waitState(s, store.SandboxReady)
}

func TestCloseEndsStreams(t *testing.T) {
	r := newRig(t)
	eng := r.open()
	s := r.start()
	events, cancel := eng.Subscribe(s.ID)
	defer cancel()
	r.close()
	deadline := time.After(3 * time.Second)
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the event stream did not end at Close")
		}
	}
}

func TestWarmPool(t *testing.T) {
	r := newRig(t)
	r.cfg.WarmPool = []session.PoolTarget{{Workers: 1, Size: 1}}
	eng := r.open()
	eventually(t, "the pool makes a cluster", func() bool { return eng.Pool().Shapes[0].Ready == 1 })
	pooled := r.fake.Creates()
	if len(pooled) != 1 {
		t.Fatalf("pool creates: %v", pooled)
	}
	if info, _ := r.fake.Get(context.Background(), pooled[0]); info.State != "paused" {
		t.Errorf("pool cluster is %s, want paused (hibernated)", info.State)
	}

	// The first learner gets the pool's cluster: no new create for them.
	r.fake.Hold() // the refill hangs, so the next learner finds the pool empty
	first := r.start()
	if sb := r.sandbox(first); sb.Name != pooled[0] {
		t.Errorf("first learner's sandbox %s, want the pool's %s", sb.Name, pooled[0])
	}
	r.waitState(first, store.SandboxReady)
	if info, _ := r.fake.Get(context.Background(), pooled[0]); info.State != "running" {
		t.Errorf("claimed cluster is %s", info.State)
	}
	eventually(t, "the pool refills", func() bool { return len(r.fake.Creates()) == 2 })

	// The second learner, while the refill is pending, gets a fresh create.
	second := r.start()
	eventually(t, "a fresh create for the second learner", func() bool { return len(r.fake.Creates()) == 3 })
	if c := r.fake.Creates(); c[2] != r.sandbox(second).Name {
		t.Errorf("creates %v: the third should be the second learner's %s", c, r.sandbox(second).Name)
	}
	r.fake.Release()
	r.waitState(second, store.SandboxReady)
	eventually(t, "the refill is ready", func() bool { return eng.Pool().Shapes[0].Ready == 1 })
	if st := eng.Pool(); st.Claims != 1 || st.Misses != 1 {
		t.Errorf("claims and misses: %+v", st)
	}

	// A restart keeps the pool: no new create, the same cluster ready.
	before := len(r.fake.Creates())
	eng = r.open()
	if st := eng.Pool(); st.Shapes[0].Ready != 1 {
		t.Errorf("pool after restart: %+v", st)
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(r.fake.Creates()); n != before {
		t.Errorf("a restart created %d clusters", n-before)
	}
	if c := r.fake.Clusters(); len(c) != 3 {
		t.Errorf("clusters after restart: %v (two learners' and the pool's)", c)
	}
}

func TestPoolGivesWayToLearners(t *testing.T) {
	r := newRig(t)
	// Room for two clusters: the pool fills one, two learners need both.
	r.cfg.CapacityCPU, r.cfg.CapacityMemory = 0.45, 1600
	r.cfg.WarmPool = []session.PoolTarget{{Workers: 2, Size: 1}}
	eng := r.open()
	eventually(t, "the pool makes a cluster", func() bool { return eng.Pool().Shapes[0].Ready == 1 })
	a, b := r.start(), r.start() // one-worker labs: the pool's two-worker cluster does not fit them
	r.waitState(a, store.SandboxReady)
	r.waitState(b, store.SandboxReady)
	if st := eng.Pool(); st.Shapes[0].Ready != 0 {
		t.Errorf("the pool kept its cluster while learners waited: %+v", st)
	}
	time.Sleep(300 * time.Millisecond)
	if st := eng.Pool(); st.Shapes[0].Creating != 0 {
		t.Errorf("the pool refilled with no room: %+v", st)
	}
}

// A session's values are drawn at Start, kept in Postgres, fill the setup
// the engine runs, and stay the session's across a restart; another
// session draws its own.
func TestSessionValues(t *testing.T) {
	r := newRig(t)
	r.open()
	ctx := context.Background()
	a, err := r.eng.Start(ctx, r.user(), valuesLab)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.eng.Start(ctx, r.user(), valuesLab)
	if err != nil {
		t.Fatal(err)
	}
	app := r.session(a).Values["app"]
	if len(app) != 8 {
		t.Fatalf("stored values %v, want an 8-letter app", r.session(a).Values)
	}
	if other := r.session(b).Values["app"]; other == app || len(other) != 8 {
		t.Errorf("two sessions drew %q and %q", app, other)
	}
	sb := r.waitState(a, store.SandboxReady)
	want := "kubectl create deployment " + app + " --image=x"
	ran := strings.Join(r.fake.Execs(sb.Name), "\n")
	if !strings.Contains(ran, want) {
		t.Errorf("setup ran:\n%s\nwant %q", ran, want)
	}
	if strings.Contains(ran, "{{") {
		t.Errorf("setup ran an unfilled template:\n%s", ran)
	}
	r.open() // a restart
	l := r.eng.SessionLab(r.session(a))
	if got := l.Steps[0].Checks[0].Probe.Command.Run; got != "echo "+app {
		t.Errorf("after a restart the check runs %q, want %q", got, "echo "+app)
	}
	if got := valuesLab.Setup[0].Run; !strings.Contains(got, "{{ .Values.app }}") {
		t.Errorf("the installed lab was changed: %q", got)
	}
}

// A session starts in the mode asked for, guided when none is, and keeps it
// across an engine restart (it lives in Postgres).
func TestStartMode(t *testing.T) {
	r := newRig(t)
	r.open()
	guided := r.start()
	challenge, err := r.eng.Start(context.Background(), r.user(), testLab, session.WithMode(store.ModeChallenge))
	if err != nil {
		t.Fatal(err)
	}
	if guided.Mode != store.ModeGuided || challenge.Mode != store.ModeChallenge {
		t.Fatalf("started in %q and %q, want guided and challenge", guided.Mode, challenge.Mode)
	}
	r.waitState(challenge, "ready")
	r.open()
	again, err := r.store.LabSession(context.Background(), challenge.ID)
	if err != nil || again.Mode != store.ModeChallenge || again.State != store.SessionActive {
		t.Errorf("after a restart: %+v %v", again, err)
	}
}

// A challenge lab has no guided mode: it starts as a challenge whatever
// the start asks for.
func TestChallengeLabStartsAsChallenge(t *testing.T) {
	r := newRig(t)
	r.open()
	challengeLab := &labs.Lab{ID: "c", Challenge: true, Cluster: labs.Cluster{Workers: 1}, Steps: []labs.Step{{ID: "one"}}}
	for _, opts := range [][]session.StartOption{nil, {session.WithMode(store.ModeGuided)}} {
		s, err := r.eng.Start(context.Background(), r.user(), challengeLab, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if s.Mode != store.ModeChallenge {
			t.Fatalf("a challenge lab started in %q mode", s.Mode)
		}
	}
}

// A start that replaces a session (an instructor's reset) is one
// transaction with the old session's end and what Within writes: when
// Within fails, the old session is still active and its cluster ready and
// untouched, and nothing new is stored; when it works, the old session is
// ended and its cluster deleted, and the new one is provisioned.
func TestStartReplacing(t *testing.T) {
	r := newRig(t)
	eng := r.open()
	ctx := context.Background()
	uid := r.user()
	old, err := eng.Start(ctx, uid, testLab)
	if err != nil {
		t.Fatal(err)
	}
	oldSandbox := r.waitState(old, store.SandboxReady)
	refused := errors.New("refused")
	_, err = eng.Start(ctx, uid, testLab, session.Replacing(old, "reset"),
		session.Within(func(context.Context, *store.LabSession) error { return refused }))
	if !errors.Is(err, session.ErrNotSaved) || !errors.Is(err, errs.Unavailable) {
		t.Fatalf("a replacing start whose Within fails: %v, want ErrNotSaved", err)
	}
	if s := r.session(old); s.State != store.SessionActive {
		t.Errorf("the old session is %s after the failed start", s.State)
	}
	if st, _ := eng.State(old.ID); st != store.SandboxReady {
		t.Errorf("the old cluster is %s after the failed start, want ready", st)
	}
	if len(r.fake.Creates()) != 1 || len(r.fake.Deletes()) != 0 {
		t.Errorf("the failed start touched clusters: creates %v, deletes %v", r.fake.Creates(), r.fake.Deletes())
	}
	// It goes on: a check still runs on it.
	if _, err := eng.Attempt(ctx, r.session(old), "one", "", false); err != nil {
		t.Errorf("an attempt on the old session after the failed start: %v", err)
	}

	var within *store.LabSession
	fresh, err := eng.Start(ctx, uid, testLab, session.Replacing(r.session(old), "reset"),
		session.Within(func(_ context.Context, s *store.LabSession) error { within = s; return nil }))
	if err != nil {
		t.Fatal(err)
	}
	if within == nil || within.ID != fresh.ID {
		t.Errorf("Within saw %+v, want the new session", within)
	}
	if s := r.session(old); s.State != store.SessionEnded || s.EndReason == nil || *s.EndReason != "reset" {
		t.Errorf("the old session after the replacing start: %s %v", s.State, s.EndReason)
	}
	r.waitState(old, store.SandboxDeleted)
	if !slices.Contains(r.fake.Deletes(), oldSandbox.Name) {
		t.Errorf("the old cluster %s was not deleted: %v", oldSandbox.Name, r.fake.Deletes())
	}
	r.waitState(fresh, store.SandboxReady)
}

// costlyFake is the fake with a cost of its own, as the Kubernetes backend
// has (session.Coster): its node Pods' requests, held while hibernated.
type costlyFake struct{ *fakesandbox.Fake }

func (costlyFake) ClusterCost(shape session.Shape) session.Cost {
	return session.Cost{CPU: 1 + 0.5*float64(shape.Workers), Memory: 1536 + 768*shape.Workers}
}
func (costlyFake) HibernatedHoldsCPU() bool { return true }

// A backend's own cost is what the capacity model counts, and where a
// hibernated cluster still holds its CPU, a second cluster that does not
// fit beside it waits.
func TestBackendCostCountsAgainstCapacity(t *testing.T) {
	r := newRig(t)
	r.sandboxes = costlyFake{r.fake}
	r.cfg.CapacityCPU = 2
	r.cfg.HibernateAfter = 300 * time.Millisecond
	eng := r.open()
	first := r.start()
	r.waitState(first, store.SandboxReady)
	if u := eng.Usage(); u.CPU != 1.5 || u.Memory != 2304 {
		t.Fatalf("usage with one cluster of the backend's cost: %+v, want 1.5 cores and 2304 MiB", u)
	}
	r.waitState(first, store.SandboxHibernated)
	if u := eng.Usage(); u.CPU != 1.5 || u.Hibernated != 1 {
		t.Fatalf("a hibernated cluster on a backend whose clusters hold their CPU: %+v", u)
	}
	second := r.start()
	eventually(t, "the second waits for room", func() bool { return eng.Usage().Queued == 1 })
	time.Sleep(300 * time.Millisecond)
	if c := r.fake.Creates(); len(c) != 1 {
		t.Fatalf("creates %v: the second cluster started beside a hibernated one that holds its CPU", c)
	}
	if err := eng.End(context.Background(), r.session(first), "ended by the learner"); err != nil {
		t.Fatal(err)
	}
	r.waitState(second, store.SandboxReady)
}
