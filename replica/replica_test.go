package replica_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/replica"
	"github.com/podpath/podpath/store"
)

func open(t *testing.T, url string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

const ttl = 2 * time.Second

// leader runs Lead for one replica and counts how often it leads.
type leader struct {
	r       *replica.Replica
	leading atomic.Int32
	terms   atomic.Int32
	cancel  context.CancelFunc
	done    chan struct{}
}

func lead(t *testing.T, st *store.Store) *leader {
	l := &leader{r: replica.New(st, "test", ttl, nil), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go func() {
		defer close(l.done)
		l.r.Lead(ctx, "engine", func(ctx context.Context, epoch int64) {
			l.terms.Add(1)
			l.leading.Add(1)
			<-ctx.Done()
			l.leading.Add(-1)
		})
	}()
	t.Cleanup(func() { cancel(); <-l.done })
	return l
}

func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// One of two replicas leads at a time; when it stops, the other leads at
// once; when one dies holding the lease, the other leads within the TTL.
func TestOneLeader(t *testing.T) {
	url := testenv.Postgres(t)
	a := lead(t, open(t, url))
	waitFor(t, "a leads", 5*time.Second, func() bool { return a.leading.Load() == 1 })
	b := lead(t, open(t, url))
	time.Sleep(3 * ttl)
	if a.leading.Load() != 1 || b.leading.Load() != 0 || a.terms.Load() != 1 {
		t.Fatalf("with a leading: a %d (terms %d), b %d", a.leading.Load(), a.terms.Load(), b.leading.Load())
	}
	// a stops: it gives the lease up and b takes it within a renewal period.
	start := time.Now()
	a.cancel()
	<-a.done
	waitFor(t, "b leads after a stopped", ttl, func() bool { return b.leading.Load() == 1 })
	t.Logf("b led %s after a stopped", time.Since(start).Round(time.Millisecond))

	// A replica that dies with the lease (no hand-over): b waits for it to
	// expire, then leads, in a new epoch.
	st := open(t, url)
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	b.cancel()
	<-b.done
	dead := uuid.New()
	if _, ok, err := st.TakeLease(context.Background(), "engine", dead, ttl); err != nil || !ok {
		t.Fatalf("the dead replica's lease: %v %v", ok, err)
	}
	before, _ := st.LeaseOf(context.Background(), "engine")
	c := lead(t, st)
	start = time.Now()
	waitFor(t, "c leads after the dead replica's lease expired", 2*ttl, func() bool { return c.leading.Load() == 1 })
	if waited := time.Since(start); waited < ttl/2 {
		t.Errorf("c led %s after the dead replica took the lease: before it expired", waited)
	}
	after, _ := st.LeaseOf(context.Background(), "engine")
	if after.Holder != c.r.ID || after.Epoch <= before.Epoch {
		t.Errorf("lease %+v after %+v", after, before)
	}
}

// A leader whose lease was taken from it (its renewal refused) stops its
// work within a renewal period.
func TestLeaderStepsDown(t *testing.T) {
	url := testenv.Postgres(t)
	st := open(t, url)
	a := lead(t, st)
	waitFor(t, "a leads", 5*time.Second, func() bool { return a.leading.Load() == 1 })
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `UPDATE leases SET holder = $1, epoch = epoch + 1 WHERE name = 'engine'`, uuid.New()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a steps down", ttl, func() bool { return a.leading.Load() == 0 })
}

// Replicas beat and are listed while alive, and forgotten when they stop.
func TestLiveReplicas(t *testing.T) {
	st := open(t, testenv.Postgres(t))
	r1, r2 := replica.New(st, "v1", ttl, nil), replica.New(st, "v1", ttl, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	for _, r := range []*replica.Replica{r1, r2} {
		go func() { r.Beat(ctx); done <- struct{}{} }()
	}
	waitFor(t, "two live replicas", 5*time.Second, func() bool {
		l, _ := r1.Live(context.Background())
		return len(l) == 2
	})
	cancel()
	<-done
	<-done
	if l, _ := r1.Live(context.Background()); len(l) != 0 {
		t.Errorf("after both stopped: %d live", len(l))
	}
}
