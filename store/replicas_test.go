package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
)

// A replica asking whether a leader is alive never counts itself: between
// taking the lease and opening its engine it leads but cannot answer.
func TestLeaderAliveIsAnotherReplica(t *testing.T) {
	st, _ := open(t)
	ctx := context.Background()
	a, b := uuid.New(), uuid.New()
	for _, id := range []uuid.UUID{a, b} {
		if err := st.BeatReplica(ctx, id, "host", "test"); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := st.LeaderAlive(ctx, "engine", 5*time.Second, b); err != nil || ok {
		t.Fatalf("no lease held: alive=%v err=%v", ok, err)
	}
	if _, ok, err := st.TakeLease(ctx, "engine", a, 10*time.Second); err != nil || !ok {
		t.Fatalf("take: %v %v", ok, err)
	}
	if ok, err := st.LeaderAlive(ctx, "engine", 5*time.Second, b); err != nil || !ok {
		t.Fatalf("b asks, a leads and beats: alive=%v err=%v", ok, err)
	}
	if ok, err := st.LeaderAlive(ctx, "engine", 5*time.Second, a); err != nil || ok {
		t.Fatalf("a asks about itself: alive=%v err=%v", ok, err)
	}
	// A leader that beats no more is not alive, though its lease is.
	time.Sleep(1100 * time.Millisecond)
	if ok, err := st.LeaderAlive(ctx, "engine", time.Second, b); err != nil || ok {
		t.Fatalf("a's beat is older than the beat asked for: alive=%v err=%v", ok, err)
	}
}
