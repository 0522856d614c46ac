package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/store"
)

// Two real podpath serve processes on one database and one Docker engine,
// with a warm pool of one control-plane-only cluster. A learner works on
// A (the leader); A is killed with SIGKILL: within 30 s B leads, the pool
// holds exactly one cluster again (none leaked by A's interrupted refill),
// and the learner's terminal and Check work through B with the progress
// made on A; A started again changes nothing for B's session.
// (Boards and broadcasts across replicas: TestWorkshopAcrossReplicas.)
func TestReplicasSurviveAKill(t *testing.T) {
	mgr := manager(t)
	ctx := context.Background()
	db := testenv.Postgres(t)
	cfg := testConfig(db)
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	env := []string{"PODPATH_LEASE_TTL=4s", "PODPATH_WARM_POOL=workers=0:1"}
	a := serveProcess(t, cfg, env...)
	b := serveProcess(t, cfg, env...)
	inst, err := st.InstanceID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prefix := "ls-" + inst + "-"
	t.Cleanup(func() {
		a.kill()
		b.kill()
		list, _ := mgr.List(context.Background())
		for _, info := range list {
			if strings.HasPrefix(info.Name, prefix) {
				mgr.Delete(context.Background(), info.Name)
			}
		}
	})
	leader := func() (holder string, epoch int64) {
		l, err := st.LeaseOf(ctx, "engine")
		if err != nil {
			return "", 0
		}
		return l.Holder.String(), l.Epoch
	}
	first, _ := leader()
	if first == "" {
		t.Fatal("nobody holds the engine lease")
	}

	ada := newClient(t, a.url)
	adaID := ada.signup("ada@example.com")
	if err := st.SetUserRole(ctx, adaID, store.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	poolReady := func(c *client) int {
		var pool struct {
			Pool struct {
				Shapes []struct{ Ready, Creating int }
			}
		}
		c.do("GET", "/api/admin/pool", nil).json(t, &pool)
		if len(pool.Pool.Shapes) != 1 {
			return -1
		}
		return pool.Pool.Shapes[0].Ready
	}
	deadline := time.Now().Add(5 * time.Minute)
	for poolReady(ada) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the warm pool has no ready cluster after 5 min")
		}
		time.Sleep(time.Second)
	}

	// The learner starts a lab on A (the pool's cluster) and checks a step.
	r := ada.do("POST", "/api/labs/static-pods/sessions", nil)
	if r.status != 201 {
		t.Fatalf("start on A: %d %s", r.status, r.body)
	}
	var sess sessionView
	r.json(t, &sess)
	waitReady(t, ada, sess.ID)
	var at attemptView
	if r := ada.do("POST", "/api/sessions/"+sess.ID+"/steps/stop-kubelet/check", nil); r.status != 200 {
		t.Fatalf("check on A: %d %s", r.status, r.body)
	} else {
		r.json(t, &at)
	}
	if at.Passed || len(at.Results) == 0 {
		t.Fatalf("a check of a step not done, on A: %+v", at)
	}

	// SIGKILL the leader, maybe in the middle of refilling the pool.
	a.kill()
	killed := time.Now()
	for {
		if h, _ := leader(); h != "" && h != first {
			break
		}
		if time.Since(killed) > 30*time.Second {
			h, _ := leader()
			t.Fatalf("30 s after the leader was killed the lease is held by %q (the killed one was %s)", h, first)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("B leads %s after the kill", time.Since(killed).Round(100*time.Millisecond))
	second, epoch := leader()

	// The pool holds one ready cluster again, and Docker has exactly two
	// clusters of this installation: the learner's and the pool's.
	ada.base = b.url
	deadline = time.Now().Add(5 * time.Minute)
	for {
		var ours []string
		list, err := mgr.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range list {
			if strings.HasPrefix(info.Name, prefix) {
				ours = append(ours, info.Name)
			}
		}
		if poolReady(ada) == 1 && len(ours) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("5 min after the kill: pool ready %d, clusters %v; want 1 ready and 2 clusters", poolReady(ada), ours)
		}
		time.Sleep(2 * time.Second)
	}

	// Through B: the progress made on A, a terminal, a Check.
	ada.do("GET", "/api/sessions/"+sess.ID, nil).json(t, &sess)
	if sess.State != "active" || sess.Sandbox.State != "ready" || sess.Steps[0].Attempts != 1 {
		t.Fatalf("the session through B: %s, cluster %s, first step %+v", sess.State, sess.Sandbox.State, sess.Steps[0])
	}
	tm, _, err := ada.terminal(t, sess.ID, "controlplane", b.url)
	if err != nil {
		t.Fatal(err)
	}
	tm.waitFor("root@controlplane:~# ", 90*time.Second)
	tm.send("echo via-$((2*21))\r")
	tm.waitFor("via-42", 30*time.Second)
	tm.conn.Close()
	r = ada.do("POST", "/api/sessions/"+sess.ID+"/steps/stop-kubelet/check", nil)
	if r.status != 200 {
		t.Fatalf("check through B: %d %s", r.status, r.body)
	}
	ada.do("GET", "/api/sessions/"+sess.ID, nil).json(t, &sess)
	if sess.Steps[0].Attempts != 2 {
		t.Fatalf("attempts after a check through B: %+v", sess.Steps[0])
	}

	// A again: B keeps the lead, the session is as it was.
	a = serveProcess(t, cfg, env...)
	time.Sleep(3 * time.Second)
	if h, e := leader(); h != second || e != epoch {
		t.Errorf("after A came back the lease is %s/%d, was %s/%d", h, e, second, epoch)
	}
	ada.base = a.url
	ada.do("GET", "/api/sessions/"+sess.ID, nil).json(t, &sess)
	if sess.State != "active" || sess.Sandbox.State != "ready" || sess.Steps[0].Attempts != 2 {
		t.Fatalf("the session through A again: %s, cluster %s, first step %+v", sess.State, sess.Sandbox.State, sess.Steps[0])
	}
	tm, _, err = ada.terminal(t, sess.ID, "controlplane", a.url)
	if err != nil {
		t.Fatal(err)
	}
	tm.send("echo again-$((6*7))\r")
	tm.waitFor("again-42", 30*time.Second)
	tm.conn.Close()
}
