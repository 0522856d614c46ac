package bus_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/podpath/podpath/bus"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/store"
)

func open(t *testing.T, url string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

// start runs a bus until the test ends and waits until it listens.
func start(t *testing.T, st *store.Store, origin string) *bus.Bus {
	t.Helper()
	b := bus.New(st, origin, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-b.Listening():
	case <-time.After(10 * time.Second):
		t.Fatal("the bus did not listen")
	}
	return b
}

func next(t *testing.T, ch <-chan bus.Message) bus.Message {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no message within 5 s")
	}
	return bus.Message{}
}

func none(t *testing.T, ch <-chan bus.Message) {
	t.Helper()
	select {
	case m := <-ch:
		t.Fatalf("a message that should not be: %+v", m)
	case <-time.After(500 * time.Millisecond):
	}
}

// Two replicas on one database: what either publishes reaches the
// subscribers of its topic on both, in order, and nobody else.
func TestTwoReplicas(t *testing.T) {
	url := testenv.Postgres(t)
	a, b := start(t, open(t, url), "a"), start(t, open(t, url), "b")
	onA, stopA := a.Subscribe("session/1")
	defer stopA()
	onB, stopB := b.Subscribe("session/1", "workshop/7")
	defer stopB()
	other, stopO := b.Subscribe("session/2")
	defer stopO()
	ctx := context.Background()
	for i := range 20 {
		if err := a.Publish(ctx, "session/1", "attempt", map[string]int{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
	for _, ch := range []<-chan bus.Message{onA, onB} {
		for i := range 20 {
			m := next(t, ch)
			var d struct{ N int }
			if err := m.Decode(&d); err != nil || m.Type != "attempt" || m.Origin != "a" || d.N != i {
				t.Fatalf("message %d: %+v (%v)", i, m, err)
			}
		}
	}
	if err := b.Publish(ctx, "workshop/7", "board", nil); err != nil {
		t.Fatal(err)
	}
	if m := next(t, onB); m.Topic != "workshop/7" || m.Origin != "b" {
		t.Errorf("b's own message: %+v", m)
	}
	none(t, onA)
	none(t, other)
}

// A message published in a transaction arrives when it commits, and never
// when it rolls back.
func TestPublishInATransaction(t *testing.T) {
	url := testenv.Postgres(t)
	st := open(t, url)
	b := start(t, st, "a")
	ch, stop := b.Subscribe("t")
	defer stop()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, commit := range []bool{false, true} {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.PublishTx(ctx, tx, "t", "change", map[string]bool{"committed": commit}); err != nil {
			t.Fatal(err)
		}
		none(t, ch) // not before the commit
		if commit {
			tx.Commit(ctx)
		} else {
			tx.Rollback(ctx)
		}
	}
	var d struct{ Committed bool }
	if m := next(t, ch); m.Decode(&d) != nil || !d.Committed {
		t.Errorf("got %+v", m)
	}
	none(t, ch)
}

// A message too large for a notification is refused with what to do.
func TestTooLarge(t *testing.T) {
	b := start(t, open(t, testenv.Postgres(t)), "a")
	err := b.Publish(context.Background(), "t", "big", strings.Repeat("x", 9000))
	if err == nil || !strings.Contains(err.Error(), "send an id") {
		t.Errorf("a 9000-byte message: %v", err)
	}
}

// When the listening connection dies, the bus listens again, tells its
// subscribers to resync, and later messages arrive.
func TestListensAgain(t *testing.T) {
	url := testenv.Postgres(t)
	st := open(t, url)
	b := start(t, st, "a")
	ch, stop := b.Subscribe("t")
	defer stop()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND datname = current_database()`); err != nil {
		t.Fatal(err)
	}
	if m := next(t, ch); m.Type != bus.TypeResync {
		t.Fatalf("after the connection died: %+v, want a resync", m)
	}
	if err := b.Publish(ctx, "t", "after", nil); err != nil {
		t.Fatal(err)
	}
	if m := next(t, ch); m.Type != "after" {
		t.Errorf("after listening again: %+v", m)
	}
}
