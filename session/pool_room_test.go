package session_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
)

// pooledFake is the fake as the Kubernetes backend looks to the engine: a
// cluster costs its node Pods' requests, lands whole on one node of a pool
// (session.Pooled), and a create fails with sandbox.ErrNoRoom on cue, as
// one does when the host's scheduler places its Pods nowhere.
type pooledFake struct {
	*fakesandbox.Fake
	mu     sync.Mutex
	nodes  []session.NodeRoom
	noRoom atomic.Int32 // creates still to fail with ErrNoRoom
	tries  atomic.Int32 // creates failed so
	specs  sync.Map     // sandbox name -> the sandbox.Spec it was created with
}

// ClusterCost is the kubernetes backend's rule: a 1-core, 1536 MiB
// control plane, and workers of 500m and 768 MiB or the shape's worker
// size where it is larger.
func (p *pooledFake) ClusterCost(shape session.Shape) session.Cost {
	cpu, mem := 0.5, 768
	if c := float64(shape.Worker.MilliCPU) / 1000; c > cpu {
		cpu = c
	}
	if m := int(shape.Worker.MemoryMiB); m > mem {
		mem = m
	}
	return session.Cost{CPU: 1 + cpu*float64(shape.Workers), Memory: 1536 + mem*shape.Workers}
}
func (p *pooledFake) HibernatedHoldsCPU() bool { return true }

func (p *pooledFake) PoolRoom(ctx context.Context) ([]session.NodeRoom, map[string]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]session.NodeRoom(nil), p.nodes...), nil, nil
}

func (p *pooledFake) setNodes(n ...session.NodeRoom) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nodes = n
}

func (p *pooledFake) Create(ctx context.Context, spec sandbox.Spec, progress func(sandbox.Event)) (*sandbox.Info, error) {
	if p.noRoom.Add(-1) >= 0 {
		p.tries.Add(1)
		return nil, fmt.Errorf("learner nodes: %w: node Pod %s-controlplane: 0/3 nodes are available: 2 Insufficient cpu", sandbox.ErrNoRoom, spec.Name)
	}
	p.specs.Store(spec.Name, spec)
	return p.Fake.Create(ctx, spec, progress)
}

func pooledRig(t *testing.T, nodes ...session.NodeRoom) (*rig, *pooledFake) {
	r := newRig(t)
	pf := &pooledFake{Fake: r.fake}
	pf.setNodes(nodes...)
	r.sandboxes = pf
	// No ceiling of the operator's: the pool is the capacity.
	r.cfg.CapacityCPU, r.cfg.CapacityMemory = 0, 0
	r.cfg.ProvisionConcurrency = 4
	r.cfg.PoolInterval = 100 * time.Millisecond
	return r, pf
}

func node(name string, cpu float64, mem int) session.NodeRoom {
	return session.NodeRoom{Name: name, CPU: cpu, Memory: mem}
}

func count(r *rig, ss []*store.LabSession, state string) int {
	n := 0
	for _, s := range ss {
		if r.sandbox(s).State == state {
			n++
		}
	}
	return n
}

// A cluster's Pods share one node, so the pool admits a cluster only where
// one node has room for all of it: three 2-core nodes are 6 cores, which
// four 1.5-core clusters fit in sum, but each node holds one. The fourth
// waits, and starts once a node is added to the pool (read again every
// PoolInterval).
func TestPoolAdmitsWhereOneNodeHasRoom(t *testing.T) {
	r, pf := pooledRig(t, node("lab-a", 2, 8192), node("lab-b", 2, 8192), node("lab-c", 2, 8192))
	eng := r.open()
	if u := eng.Usage(); u.CPULimit != 6 || u.MemLimit != 3*8192 {
		t.Fatalf("the pool's room as the capacity: %+v, want 6 cores and %d MiB", u, 3*8192)
	}
	if n := eng.Usage().Seats(session.Cost{CPU: 1.5, Memory: 2304}); n != 3 {
		t.Fatalf("seats of 1.5 cores on three 2-core nodes: %d, want 3 (one per node; 4 in the sum)", n)
	}
	var ss []*store.LabSession
	for range 4 {
		ss = append(ss, r.start())
	}
	eventually(t, "three clusters ready, one queued", func() bool {
		return count(r, ss, store.SandboxReady) == 3 && eng.Usage().Queued == 1
	})
	time.Sleep(300 * time.Millisecond) // three pool reads
	if c := pf.Creates(); len(c) != 3 {
		t.Fatalf("creates %v: a cluster started though no node had room for it", c)
	}
	pf.setNodes(node("lab-a", 2, 8192), node("lab-b", 2, 8192), node("lab-c", 2, 8192), node("lab-d", 2, 8192))
	eventually(t, "the fourth starts on the added node", func() bool { return count(r, ss, store.SandboxReady) == 4 })
}

// A cluster larger than every node of the pool can never start: it fails
// at once, saying what it needs and what the largest node has, and nothing
// is created.
func TestPoolRefusesClusterLargerThanAnyNode(t *testing.T) {
	r, pf := pooledRig(t, node("lab-a", 1, 8192), node("lab-b", 1, 8192))
	r.open()
	s := r.start()
	failed := r.waitState(s, store.SandboxFailed)
	msg := ""
	if failed.Error != nil {
		msg = *failed.Error
	}
	for _, want := range []string{"no node of the lab pool can hold this cluster", "1.50 cores and 2304 MiB", "the largest lab node has 1.00 cores"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure %q does not say %q", msg, want)
		}
	}
	if c := pf.Creates(); len(c) != 0 {
		t.Fatalf("creates %v for a cluster no node can hold", c)
	}
}

// Where the host's scheduler finds no room though the model did (the
// pool's other Pods take more than the model knows), the start goes back
// to the queue and is made once another cluster ends; with no other
// cluster there to end, it fails with the scheduler's reason.
func TestNoRoomRequeuesUntilAClusterEnds(t *testing.T) {
	r, pf := pooledRig(t, node("lab-a", 2, 8192), node("lab-b", 2, 8192))
	eng := r.open()
	first := r.start()
	r.waitState(first, store.SandboxReady)
	pf.noRoom.Store(1)
	second := r.start()
	eventually(t, "the scheduler's refusal", func() bool { return pf.tries.Load() == 1 })
	r.waitState(second, store.SandboxRequested)
	time.Sleep(300 * time.Millisecond)
	if got := r.sandbox(second).State; got != store.SandboxRequested {
		t.Fatalf("after the scheduler's refusal the start is %s, want it back in the queue (requested)", got)
	}
	if c := pf.Creates(); len(c) != 1 {
		t.Fatalf("creates %v: the refused start was tried again before any cluster ended", c)
	}
	if err := eng.End(context.Background(), r.session(first), "ended by the learner"); err != nil {
		t.Fatal(err)
	}
	r.waitState(second, store.SandboxReady)

	// Alone on the pool: nothing can make room, so it fails and says why.
	if err := eng.End(context.Background(), r.session(second), "ended by the learner"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the second cluster's room given back", func() bool {
		u := eng.Usage()
		return u.Running+u.Hibernated+u.Creating == 0
	})
	pf.noRoom.Store(1)
	third := r.start()
	failed := r.waitState(third, store.SandboxFailed)
	if failed.Error == nil || !strings.Contains(*failed.Error, "Insufficient cpu") || !strings.Contains(*failed.Error, "no other learner cluster") {
		t.Fatalf("the failure of a start no node has room for, alone: %v", failed.Error)
	}
}

// A lab that asks for bigger workers gets them: the create is told the
// size, the model counts the bigger cost (so fewer fit on a node), a
// restarted engine still counts it, and a default-sized warm-pool cluster
// is not handed to it.
func TestWorkerSizeIsCreatedCountedAndKept(t *testing.T) {
	r, pf := pooledRig(t, node("lab-a", 4, 8192), node("lab-b", 4, 8192))
	r.cfg.WarmPool = []session.PoolTarget{{Workers: 1, Size: 1}}
	eng := r.open()
	eventually(t, "the warm pool's cluster", func() bool { return eng.Pool().Shapes[0].Ready == 1 })
	start := func() *store.LabSession {
		s, err := eng.Start(context.Background(), r.user(), bigLab)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := start()
	sb := r.waitState(first, store.SandboxReady)
	if sb.Pool {
		t.Fatalf("the 4 GiB lab took the default-sized pool cluster %s", sb.Name)
	}
	spec, ok := pf.specs.Load(sb.Name)
	if !ok || spec.(sandbox.Spec).Worker != (sandbox.Size{MemoryMiB: 4096}) {
		t.Fatalf("created with %+v, want workers of 4096 MiB", spec)
	}
	// 1536 + 4096 MiB each, so each 8 GiB node holds one (the idle pool
	// cluster makes way for a learner who waits, and that is not enough).
	second := start()
	r.waitState(second, store.SandboxReady)
	third := start()
	eventually(t, "the third waits for room", func() bool { return eng.Usage().Queued == 1 && eng.Pool().Shapes[0].Ready == 0 })
	time.Sleep(300 * time.Millisecond)
	want := 2 * (1536 + 4096)
	if u := eng.Usage(); u.Memory != want {
		t.Fatalf("memory counted %d MiB, want %d", u.Memory, want)
	}
	if err := eng.End(context.Background(), r.session(third), "ended by the learner"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the queue empty", func() bool { return eng.Usage().Queued == 0 })
	r.cfg.WarmPool = nil
	eng = r.open() // a restart: the size comes back from Postgres
	if u := eng.Usage(); u.Memory != want {
		t.Fatalf("after a restart, memory counted %d MiB, want %d", u.Memory, want)
	}
}
