package session_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/podpath/podpath/bus"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/replica"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
)

// member is one replica's session engine on the rig's database.
type member struct {
	s      *session.Sessions
	rep    *replica.Replica
	cancel context.CancelFunc
	done   chan struct{}
}

func (r *rig) member(t *testing.T) *member {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("PODPATH_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	st, err := store.Open(context.Background(), r.db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	rep := replica.New(st, "test", 2*time.Second, log)
	b := bus.New(st, rep.ID.String(), log)
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{rep: rep, cancel: cancel, done: make(chan struct{})}
	m.s = session.NewSessions(r.cfg, session.Deps{Store: st, Sandboxes: r.fake, Labs: []*labs.Lab{testLab, valuesLab}, Log: log}, b, rep)
	busDone := make(chan struct{})
	go func() { b.Run(ctx); close(busDone) }()
	<-b.Listening()
	go func() { m.s.Run(ctx); <-busDone; close(m.done) }()
	t.Cleanup(m.stop)
	return m
}

func (m *member) stop() {
	m.cancel()
	<-m.done
}

// Two replicas on one database: one leads; a session started, checked and
// ended through the other runs on the leader's engine, and the lab page's
// events reach a subscriber on either. When the leader stops, the other
// leads, finds the session's cluster, and serves it.
func TestReplicatedSessions(t *testing.T) {
	r := newRig(t)
	a := r.member(t)
	eventually(t, "a leads", a.s.Leader)
	b := r.member(t)
	time.Sleep(time.Second)
	if b.s.Leader() {
		t.Fatal("both replicas lead")
	}
	ctx := context.Background()
	user := r.user()
	sess, err := b.s.Start(ctx, user, testLab)
	if err != nil {
		t.Fatalf("start through the follower: %v", err)
	}
	onA, stopA := a.s.Subscribe(sess.ID)
	defer stopA()
	onB, stopB := b.s.Subscribe(sess.ID)
	defer stopB()
	eventually(t, "the cluster is ready", func() bool {
		sb, err := r.store.SandboxOf(ctx, sess.ID)
		return err == nil && sb.State == store.SandboxReady
	})
	if len(r.fake.Clusters()) != 1 {
		t.Errorf("clusters %v, want the session's one", r.fake.Clusters())
	}
	at, err := b.s.Attempt(ctx, sess, "one", "", false)
	if err != nil || at == nil || at.StepID != "one" {
		t.Fatalf("a check through the follower: %+v %v", at, err)
	}
	for name, ch := range map[string]<-chan session.Event{"leader": onA, "follower": onB} {
		deadline := time.After(5 * time.Second)
		for got := false; !got; {
			select {
			case ev := <-ch:
				if a, ok := ev.Data.(*store.Attempt); ev.Type == session.EventAttempt && ok && a.ID == at.ID {
					got = true
				}
			case <-deadline:
				t.Fatalf("no attempt event on the %s", name)
			}
		}
	}
	// Keys typed on the follower reach the leader's idle timer.
	before := a.s.LastActivity(sess)
	time.Sleep(50 * time.Millisecond)
	b.s.Touch(sess.ID)
	eventually(t, "the follower's activity reaches the leader", func() bool {
		return a.s.LastActivity(sess).After(before)
	})

	// The leader stops: the follower leads, finds the cluster, and a check
	// through it works; nothing was created twice or deleted.
	a.stop()
	eventually(t, "b leads", b.s.Leader)
	if _, err := b.s.Attempt(ctx, sess, "one", "", false); err != nil {
		t.Fatalf("a check after the hand-over: %v", err)
	}
	if cl := r.fake.Clusters(); len(cl) != 1 {
		t.Errorf("clusters after the hand-over %v", cl)
	}
	// Ending through the new leader deletes the cluster, and every
	// replica hears it (the server closes its terminals then).
	ended := make(chan uuid.UUID, 1)
	b.s.OnEnd(func(id uuid.UUID) { ended <- id })
	if err := b.s.End(ctx, sess, "ended by the learner"); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-ended:
		if id != sess.ID {
			t.Errorf("ended %s, want %s", id, sess.ID)
		}
	case <-time.After(5 * time.Second):
		t.Error("the end was not heard")
	}
	eventually(t, "the cluster is deleted", func() bool { return len(r.fake.Clusters()) == 0 })
}

// With no replica leading, a follower's request fails at once with a
// sentence to try again, not after a long wait.
func TestNoLeader(t *testing.T) {
	r := newRig(t)
	a := r.member(t)
	eventually(t, "a leads", a.s.Leader)
	// A dead replica holds the lease for a while.
	a.stop()
	if _, ok, err := r.store.TakeLease(context.Background(), session.LeaseEngine, uuid.New(), time.Minute); err != nil || !ok {
		t.Fatalf("the dead holder's lease: %v %v", ok, err)
	}
	b := r.member(t)
	start := time.Now()
	_, err := b.s.Start(context.Background(), r.user(), testLab)
	if err == nil || !strings.Contains(err.Error(), "try again") || time.Since(start) > 10*time.Second {
		t.Errorf("a start with no leader: %v after %s", err, time.Since(start))
	}
}
