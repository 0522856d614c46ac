package session

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/store"
)

// Cost is what one learner cluster takes from the host.
type Cost struct {
	CPU    float64 // cores, while running
	Memory int     // MiB, running or hibernated
}

// Shape is a cluster's form: its workers, and the least each must be able
// to use (a lab's cluster.worker; zero: the backend's default).
type Shape struct {
	Workers int          `json:"workers"`
	Worker  sandbox.Size `json:"worker,omitzero"`
}

// ShapeOf is the shape of a lab's cluster. A worker size that does not
// parse (labs validate refuses it) is the default.
func ShapeOf(l *labs.Lab) Shape {
	cpu, mem, err := l.Cluster.Worker.Parse()
	if err != nil {
		cpu, mem = 0, 0
	}
	return Shape{Workers: l.Cluster.Workers, Worker: sandbox.Size{MilliCPU: cpu, MemoryMiB: mem}}
}

// shapeOf is the shape a stored sandbox was made in.
func shapeOf(sb *store.Sandbox) Shape {
	return Shape{Workers: sb.Workers, Worker: sandbox.Size{MilliCPU: sb.WorkerMilliCPU, MemoryMiB: sb.WorkerMemoryMiB}}
}

// Coster is a sandbox backend whose clusters cost other than ClusterCost
// says (the Kubernetes backend: its node Pods' requests, sized by the
// shape's worker size). The engine, the warm pool and the workshops'
// capacity notes ask CostOf.
type Coster interface {
	ClusterCost(shape Shape) Cost
	// HibernatedHoldsCPU says a hibernated cluster still counts against
	// CPU (a backend that cannot freeze, or whose scheduler counts
	// requests, not use).
	HibernatedHoldsCPU() bool
}

// CostOf is a cluster's cost on the given backend: its own where it says
// (Coster), else ClusterCost (the Docker backend's nodes have no limits,
// so a worker size changes nothing there).
func CostOf(sb Sandboxes, shape Shape) Cost {
	if c, ok := sb.(Coster); ok {
		return c.ClusterCost(shape)
	}
	return ClusterCost(shape.Workers)
}

// NodeRoom is one node of a backend's lab pool: what learner clusters may
// take there (its allocatable room, less what other Pods request).
type NodeRoom struct {
	Name   string
	CPU    float64 // cores
	Memory int     // MiB
}

// Pooled is a backend whose clusters each land whole on one node of a pool
// (the Kubernetes backend: a learner's node Pods share a host node). The
// engine reads it at Open and every PoolInterval, and the capacity model
// then admits a cluster only where one node has room for all of it.
type Pooled interface {
	// PoolRoom is the pool's nodes and, for each cluster of this
	// installation that has landed, the node it is on.
	PoolRoom(ctx context.Context) ([]NodeRoom, map[string]string, error)
}

// ErrTooBig is why a cluster that fits on no node of the pool, even an
// empty one, is refused instead of queued.
var ErrTooBig = errors.New("no node of the lab pool can hold this cluster")

// ClusterCost estimates a cluster's cost from its shape (measured: an idle
// control plane takes about 13% of a core and 500 MiB, a worker 2-5% and
// 100 MiB; see docs/PERFORMANCE.md).
func ClusterCost(workers int) Cost {
	return Cost{CPU: 0.15 + 0.05*float64(workers), Memory: 600 + 150*workers}
}

// capacity admits new clusters while the host has room: running clusters
// count against CPU and memory, hibernated ones against memory only, and at
// most `slots` clusters are created at once. Waiters are served in order.
//
// Room is held by a ticket. Only the ticket that holds a name can give it
// back, and only once, so a late release from an old provisioning run can
// never free the room of the run that replaced it.
type capacity struct {
	mu      sync.Mutex
	cpu     float64
	memory  int
	slots   int
	busy    int
	holders map[string]*ticket
	queue   []*waiter
	// frozenCPU: hibernated clusters count against CPU too (Coster).
	frozenCPU bool
	// bins are the pool's nodes (Pooled); nil: one host, one sum. cpuCap
	// and memCap are the operator's ceiling over the pool's sum (0: none).
	bins           []NodeRoom
	cpuCap, memCap float64
	// sig is closed and replaced at every change, waking position watchers.
	sig chan struct{}
	// released counts the tickets given back, for waitRelease.
	released uint64
}

// ticket is one cluster's hold on the host's room.
type ticket struct {
	c          *capacity
	name       string
	cost       Cost
	hibernated bool
	creating   bool // counts against slots
	released   bool
	// node is the pool node the cluster is on (Pooled): where it landed, or
	// until it has, where the model expects the host's scheduler to put it.
	node string
}

type waiter struct {
	t     *ticket
	ready chan struct{}
}

func newCapacity(cpu float64, memory, slots int) *capacity {
	if slots < 1 {
		slots = 1
	}
	return &capacity{cpu: cpu, memory: memory, slots: slots, holders: map[string]*ticket{}, sig: make(chan struct{})}
}

func (c *capacity) used() (cpu float64, mem int) {
	for _, h := range c.holders {
		mem += h.cost.Memory
		if !h.hibernated || c.frozenCPU {
			cpu += h.cost.CPU
		}
	}
	return
}

// fits reports whether a cluster of cost cs can start now. An empty host
// always admits one cluster, so a small capacity setting never blocks every
// learner.
func (c *capacity) fits(cs Cost) bool {
	if c.busy >= c.slots {
		return false
	}
	if c.bins != nil {
		// The operator's ceiling, if any, over the whole pool; past it, the
		// empty-pool rule of one host does not apply (the pool is read).
		cpu, mem := c.used()
		if len(c.holders) > 0 && ((c.cpuCap > 0 && cpu+cs.CPU > c.cpuCap+1e-9) || (c.memCap > 0 && float64(mem+cs.Memory) > c.memCap)) {
			return false
		}
		return c.place(cs) != ""
	}
	if len(c.holders) == 0 {
		return true
	}
	cpu, mem := c.used()
	return cpu+cs.CPU <= c.cpu && mem+cs.Memory <= c.memory
}

// free is what each pool node has left once its clusters are counted.
// Callers hold mu.
func (c *capacity) free() map[string]NodeRoom {
	free := make(map[string]NodeRoom, len(c.bins))
	for _, b := range c.bins {
		free[b.Name] = b
	}
	for _, h := range c.holders {
		f, ok := free[h.node]
		if !ok {
			continue
		}
		f.Memory -= h.cost.Memory
		if !h.hibernated || c.frozenCPU {
			f.CPU -= h.cost.CPU
		}
		free[h.node] = f
	}
	return free
}

// place is the node a cluster of cost cs would go to, or "" where none has
// room: the one with the most CPU left, then memory, as the host's
// scheduler scores nodes by default (least allocated). Callers hold mu.
func (c *capacity) place(cs Cost) string {
	var best *NodeRoom
	for _, f := range c.free() {
		if f.CPU+1e-9 < cs.CPU || f.Memory < cs.Memory {
			continue
		}
		if best == nil || f.CPU > best.CPU || (f.CPU == best.CPU && (f.Memory > best.Memory || (f.Memory == best.Memory && f.Name < best.Name))) {
			f := f
			best = &f
		}
	}
	if best == nil {
		return ""
	}
	return best.Name
}

// tooBig says why a cluster of cost cs can never start on the pool: it is
// larger than its largest node. nil on one host (the empty-host rule
// admits anything there) or while the pool is unread.
func (c *capacity) tooBig(cs Cost) error {
	if len(c.bins) == 0 {
		return nil
	}
	var cpu float64
	var mem int
	for _, b := range c.bins {
		if b.CPU+1e-9 >= cs.CPU && b.Memory >= cs.Memory {
			return nil
		}
		cpu, mem = max(cpu, b.CPU), max(mem, b.Memory)
	}
	return fmt.Errorf("%w: it needs %.2f cores and %d MiB on one node (a learner's nodes share one), and the largest lab node has %.2f cores and %d MiB for learner clusters: give the pool larger nodes, or make the node Pods smaller (PODPATH_KUBE_CONTROL_PLANE_SIZE, PODPATH_KUBE_WORKER_SIZE; a lab's cluster.worker sets a floor)", ErrTooBig, cs.CPU, cs.Memory, cpu, mem)
}

// setPool replaces the pool's nodes and moves every cluster that has
// landed to the node it is on; the others keep the model's guess.
func (c *capacity) setPool(bins []NodeRoom, placed map[string]string, cpuCap, memCap float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	bins = append([]NodeRoom(nil), bins...)
	sort.Slice(bins, func(i, j int) bool { return bins[i].Name < bins[j].Name })
	if bins == nil {
		bins = []NodeRoom{}
	}
	c.bins, c.cpuCap, c.memCap = bins, cpuCap, memCap
	c.cpu, c.memory = 0, 0
	for _, b := range bins {
		c.cpu += b.CPU
		c.memory += b.Memory
	}
	if cpuCap > 0 && cpuCap < c.cpu {
		c.cpu = cpuCap
	}
	if memCap > 0 && int(memCap) < c.memory {
		c.memory = int(memCap)
	}
	for name, h := range c.holders {
		if n, ok := placed[name]; ok {
			h.node = n
		}
	}
	c.wake()
}

// changedLocked wakes watchers. Callers hold mu.
func (c *capacity) changedLocked() {
	close(c.sig)
	c.sig = make(chan struct{})
}

// wake admits waiters from the head of the queue while they fit. Callers
// hold mu.
func (c *capacity) wake() {
	c.changedLocked()
	for len(c.queue) > 0 && c.fits(c.queue[0].t.cost) {
		w := c.queue[0]
		c.queue = c.queue[1:]
		c.admit(w.t)
		close(w.ready)
	}
}

func (c *capacity) admit(t *ticket) {
	if c.bins != nil && t.node == "" {
		t.node = c.place(t.cost)
	}
	c.busy++
	t.creating = true
	c.holders[t.name] = t
}

// acquire waits for room for a cluster. onPosition reports the 1-based queue
// position whenever it changes while waiting. The ticket's created must be
// called once the cluster is made (or failed), release when it is deleted.
func (c *capacity) acquire(ctx context.Context, name string, cs Cost, onPosition func(int)) (*ticket, error) {
	t := &ticket{c: c, name: name, cost: cs}
	w := &waiter{t: t, ready: make(chan struct{})}
	c.mu.Lock()
	if err := c.tooBig(cs); err != nil {
		c.mu.Unlock()
		return nil, err
	}
	c.queue = append(c.queue, w)
	c.wake()
	c.mu.Unlock()
	last := -1
	for {
		changed := c.changed()
		pos := c.position(name)
		if pos != last && pos > 0 && onPosition != nil {
			onPosition(pos)
		}
		last = pos
		select {
		case <-w.ready:
			return t, nil
		case <-ctx.Done():
			c.mu.Lock()
			for i, q := range c.queue {
				if q == w {
					c.queue = append(c.queue[:i], c.queue[i+1:]...)
					break
				}
			}
			c.mu.Unlock()
			select {
			case <-w.ready: // admitted meanwhile: give the room back
				t.release()
			default:
				c.mu.Lock()
				c.changedLocked()
				c.mu.Unlock()
			}
			return nil, ctx.Err()
		case <-changed:
		}
	}
}

// tryAcquire takes room at once if nobody is waiting and it fits; it never
// queues. The warm pool uses it, so it never gets ahead of a learner.
func (c *capacity) tryAcquire(name string, cs Cost) *ticket {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) > 0 || !c.fits(cs) {
		return nil
	}
	t := &ticket{c: c, name: name, cost: cs}
	c.admit(t)
	c.changedLocked()
	return t
}

// created ends the create slot of the ticket (the cluster exists now, or
// failed); its room stays held until release.
func (t *ticket) created() {
	if t == nil {
		return
	}
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.creating {
		t.creating = false
		c.busy--
		c.wake()
	}
}

// release gives the ticket's room back; releasing twice, or a ticket that
// no longer holds its name, changes nothing.
func (t *ticket) release() {
	if t == nil {
		return
	}
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.released {
		return
	}
	t.released = true
	c.released++
	if t.creating {
		t.creating = false
		c.busy--
	}
	if c.holders[t.name] == t {
		delete(c.holders, t.name)
	}
	c.wake()
}

// setHibernated moves the ticket's cluster between running and hibernated.
func (t *ticket) setHibernated(h bool) {
	if t == nil {
		return
	}
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	t.hibernated = h
	c.wake()
}

// hold registers a cluster that already exists (found at start-up).
func (c *capacity) hold(name string, cs Cost, hibernated bool) *ticket {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &ticket{c: c, name: name, cost: cs, hibernated: hibernated}
	c.holders[name] = t
	c.changedLocked()
	return t
}

// releases is how many tickets have been given back so far, and how many
// clusters hold room now.
func (c *capacity) releases() (gen uint64, holders int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.released, len(c.holders)
}

// waitRelease waits until a ticket is given back after gen (releases), or
// for at most d; it fails only when ctx ends.
func (c *capacity) waitRelease(ctx context.Context, gen uint64, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		changed := c.changed()
		c.mu.Lock()
		done := c.released > gen
		c.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return nil
		case <-changed:
		}
	}
}

// changed returns a channel that is closed at the next change.
func (c *capacity) changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sig
}

// position is the 1-based position of name in the queue, or 0.
func (c *capacity) position(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, w := range c.queue {
		if w.t.name == name {
			return i + 1
		}
	}
	return 0
}

// waiting is how many clusters wait for room.
func (c *capacity) waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

// Usage is the capacity model's view of the host, for metrics and admins.
type Usage struct {
	CPU        float64 `json:"cpuCores"`
	Memory     int     `json:"memoryMiB"`
	CPULimit   float64 `json:"cpuLimitCores"`
	MemLimit   int     `json:"memoryLimitMiB"`
	Running    int     `json:"running"`
	Hibernated int     `json:"hibernated"`
	Creating   int     `json:"creating"`
	Queued     int     `json:"queued"`
	// Nodes are the lab pool's nodes (Pooled backends), each at the room
	// it has for learner clusters; none on one host.
	Nodes []NodeRoom `json:"nodes,omitempty"`
}

// Seats is how many clusters of cost c fit at once, every one running: in
// the sum on one host, node by node on a pool (a cluster lands whole on
// one node).
func (u Usage) Seats(c Cost) int {
	if c.CPU <= 0 || c.Memory <= 0 {
		return 0
	}
	if len(u.Nodes) == 0 {
		return min(int(math.Floor(u.CPULimit/c.CPU+1e-9)), u.MemLimit/c.Memory)
	}
	n := 0
	for _, r := range u.Nodes {
		n += max(0, min(int(math.Floor(r.CPU/c.CPU+1e-9)), r.Memory/c.Memory))
	}
	if u.CPULimit > 0 || u.MemLimit > 0 { // the operator's ceiling, if lower
		n = min(n, int(math.Floor(u.CPULimit/c.CPU+1e-9)), u.MemLimit/c.Memory)
	}
	return n
}

func (c *capacity) usage() Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := Usage{CPULimit: c.cpu, MemLimit: c.memory, Creating: c.busy, Queued: len(c.queue), Nodes: append([]NodeRoom(nil), c.bins...)}
	u.CPU, u.Memory = c.used()
	for _, h := range c.holders {
		if h.hibernated {
			u.Hibernated++
		} else {
			u.Running++
		}
	}
	return u
}
