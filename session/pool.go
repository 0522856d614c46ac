package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/store"
)

// PoolTarget is how many warm clusters of one shape to keep.
type PoolTarget struct {
	Workers int `json:"workers"`
	Size    int `json:"size"`
	// Worker is the worker size of a workshop's lab; the general pool's
	// clusters have the default (zero).
	Worker sandbox.Size `json:"worker,omitzero"`
}

// Shape is the target's cluster shape.
func (t PoolTarget) Shape() Shape { return Shape{Workers: t.Workers, Worker: t.Worker} }

// ParsePool reads PODPATH_WARM_POOL: a count ("2": clusters of one worker,
// the shape of every built-in lab) or counts by shape
// ("workers=1:2,workers=2:1"). Empty means no pool.
func ParsePool(s string) ([]PoolTarget, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return nil, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 || n > 50 {
			return nil, fmt.Errorf("warm pool %q: use 0 to 50 clusters", s)
		}
		return []PoolTarget{{Workers: 1, Size: n}}, nil
	}
	var out []PoolTarget
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		shape, count, ok := strings.Cut(part, ":")
		w, werr := strconv.Atoi(strings.TrimPrefix(shape, "workers="))
		n, nerr := strconv.Atoi(count)
		if !ok || !strings.HasPrefix(shape, "workers=") || werr != nil || nerr != nil {
			return nil, fmt.Errorf("warm pool %q: write a count (2) or counts by shape (workers=1:2,workers=2:1); %q is neither", s, part)
		}
		if w < 0 || w > sandbox.MaxWorkers || n < 0 || n > 50 {
			return nil, fmt.Errorf("warm pool %q: workers go from 0 to %d and counts from 0 to 50", s, sandbox.MaxWorkers)
		}
		if seen[w] {
			return nil, fmt.Errorf("warm pool %q: workers=%d is named twice", s, w)
		}
		seen[w] = true
		out = append(out, PoolTarget{Workers: w, Size: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Workers < out[j].Workers })
	return out, nil
}

// pool keeps clusters created ahead, hibernated until a learner's Start
// claims one. It refills only when the host has room and nobody waits in
// the queue, and its idle clusters are the first to go when a learner
// needs the room. Its members are rows in the sandboxes table (pool, no
// session), so a restart finds them again.
type pool struct {
	e       *Engine
	targets []PoolTarget
	mu      sync.Mutex
	members map[string]*member
	// demand is what workshops want prepared, by workshop id; their
	// members are claimed by that workshop's learners only.
	demand map[int64]PoolTarget
	// creates are the last measured create times (pool and learners'),
	// for estimates.
	creates []time.Duration
	// starts counts each workshop's session starts, so that a demand
	// computed from a count of learners read a moment ago can discount
	// the starts since (PrepareMark).
	starts map[int64]uint64
}

type member struct {
	name   string
	shape  Shape
	image  string
	state  string // creating, ready (hibernated), claimed
	ticket *ticket
	// workshop is the workshop the member was prepared for (0: anyone's).
	workshop int64
}

const (
	memberCreating = "creating"
	memberReady    = "ready"
	memberClaimed  = "claimed"
)

func newPool(e *Engine, targets []PoolTarget) *pool {
	return &pool{e: e, targets: targets, members: map[string]*member{}, demand: map[int64]PoolTarget{}, starts: map[int64]uint64{}}
}

// claim takes a ready member of the shape, or returns nil. A workshop's
// learner takes one prepared for the workshop first, then anyone's; other
// learners never take a workshop's.
func (p *pool) claim(shape Shape, image string, workshop int64) *member {
	p.mu.Lock()
	defer p.mu.Unlock()
	var best *member
	rank := func(m *member) int {
		if m.workshop == workshop {
			return 0
		}
		return 1
	}
	for _, m := range p.members {
		if m.state != memberReady || m.shape != shape || m.image != image || (m.workshop != 0 && m.workshop != workshop) {
			continue
		}
		if best == nil || rank(m) < rank(best) || (rank(m) == rank(best) && m.name < best.name) {
			best = m
		}
	}
	if best != nil {
		best.state = memberClaimed
		if d, ok := p.demand[best.workshop]; ok && best.workshop != 0 && d.Size > 0 {
			// One fewer to keep ready until the server's next word on
			// the workshop: a refill in between would make one too many.
			d.Size--
			p.demand[best.workshop] = d
		}
	}
	return best
}

// unclaim gives a member back when its session could not be stored.
func (p *pool) unclaim(m *member) {
	if m == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	m.state = memberReady
}

// claimed forgets a member a session now owns.
func (p *pool) claimed(m *member) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.members, m.name)
}

// PoolStatus is the pool as admins see it.
type PoolStatus struct {
	Shapes []PoolShape `json:"shapes"`
	Claims int64       `json:"claims"`
	Misses int64       `json:"misses"`
}

// PoolShape is the pool of one cluster shape.
type PoolShape struct {
	Workers  int `json:"workers"`
	Size     int `json:"size"`
	Ready    int `json:"ready"`
	Creating int `json:"creating"`
}

// Pool reports the warm pool.
func (e *Engine) Pool() PoolStatus {
	st := PoolStatus{Claims: e.metrics.claims.Load(), Misses: e.metrics.misses.Load(), Shapes: []PoolShape{}}
	p := e.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.targets {
		sh := PoolShape{Workers: t.Workers, Size: t.Size}
		for _, m := range p.members {
			if m.shape != t.Shape() || m.workshop != 0 {
				continue // a workshop's clusters are not the general pool's
			}
			switch m.state {
			case memberReady:
				sh.Ready++
			case memberCreating:
				sh.Creating++
			}
		}
		st.Shapes = append(st.Shapes, sh)
	}
	return st
}

// refill starts creating members where a shape is short, one at a time, and
// evicts an idle member when a learner waits for room.
func (p *pool) refill(ctx context.Context) {
	if p.e.capacity.waiting() > 0 {
		p.evictOne(ctx)
		return
	}
	if p.dropSurplus(ctx) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.members {
		if m.state == memberCreating {
			return // one pool create at a time leaves the slots to learners
		}
	}
	for _, w := range p.wantsLocked() {
		if p.haveLocked(w.workshop, w.Shape()) >= w.Size {
			continue
		}
		name := p.e.namePrefix() + "p" + randomHex(5)
		tk := p.e.capacity.tryAcquire(name, CostOf(p.e.sandboxes, w.Shape()))
		if tk == nil {
			return // no room now; try at the next reap
		}
		if err := p.e.store.CreatePoolSandbox(ctx, name, p.e.cfg.NodeImage, w.Workers, w.Worker.MilliCPU, w.Worker.MemoryMiB, w.workshop); err != nil {
			tk.release()
			p.e.log.Error("record pool cluster", "err", err)
			return
		}
		m := &member{name: name, shape: w.Shape(), image: p.e.cfg.NodeImage, state: memberCreating, ticket: tk, workshop: w.workshop}
		p.members[name] = m
		p.e.goBackground(func() { p.create(m) })
		return
	}
}

// want is a target of the pool: anyone's (workshop 0) or a workshop's.
type want struct {
	PoolTarget
	workshop int64
}

// wantsLocked lists the targets, workshops' first (oldest id first: a
// class has a start time, the general pool has none). Callers hold mu.
func (p *pool) wantsLocked() []want {
	var out []want
	for id, t := range p.demand {
		out = append(out, want{t, id})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].workshop < out[j].workshop })
	for _, t := range p.targets {
		out = append(out, want{t, 0})
	}
	return out
}

// haveLocked counts the unclaimed members (ready or creating) of a target.
func (p *pool) haveLocked(workshop int64, shape Shape) int {
	n := 0
	for _, m := range p.members {
		if m.workshop == workshop && m.shape == shape && m.image == p.e.cfg.NodeImage && m.state != memberClaimed {
			n++
		}
	}
	return n
}

// dropSurplus deletes one ready member a workshop no longer wants (its
// demand fell or ended), and reports whether it did.
func (p *pool) dropSurplus(ctx context.Context) bool {
	p.mu.Lock()
	var victim *member
	for _, m := range p.members {
		if m.workshop == 0 || m.state != memberReady {
			continue
		}
		d := p.demand[m.workshop]
		if d.Shape() != m.shape || p.haveLocked(m.workshop, m.shape) > d.Size {
			victim = m
			break
		}
	}
	if victim != nil {
		victim.state = memberClaimed
	}
	p.mu.Unlock()
	if victim == nil {
		return false
	}
	p.e.log.Info("deleting a prepared cluster its workshop no longer wants", "sandbox", victim.name, "workshop", victim.workshop)
	p.remove(ctx, victim)
	return true
}

// remove deletes a member's cluster and gives its room back.
func (p *pool) remove(ctx context.Context, m *member) {
	if err := p.e.sandboxes.Delete(ctx, m.name); err != nil {
		p.e.log.Error("delete pool cluster", "sandbox", m.name, "err", err)
		p.unclaim(m)
		return
	}
	m.ticket.release()
	p.e.writes.state(ctx, m.name, store.SandboxDeleted, nil)
	p.mu.Lock()
	delete(p.members, m.name)
	p.mu.Unlock()
}

// measured records how long a cluster's create took.
func (p *pool) measured(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.creates = append(p.creates, d)
	if len(p.creates) > 20 {
		p.creates = p.creates[len(p.creates)-20:]
	}
}

// Prepared is how far a workshop's prepared clusters are.
type Prepared struct {
	Target   int `json:"target"`
	Ready    int `json:"ready"`
	Creating int `json:"creating"`
	// MeanCreate is the mean of the last measured creates on this host
	// (0 before the first).
	MeanCreate time.Duration `json:"-"`
	// ETA is how long until the target is reached, creating one at a
	// time at MeanCreate (0 when it is reached or nothing was measured).
	ETA time.Duration `json:"-"`
}

// PrepareMark notes how many sessions each workshop has started so far;
// take it before reading the learner counts a Prepare is computed from.
func (e *Engine) PrepareMark() map[int64]uint64 {
	p := e.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[int64]uint64, len(p.starts))
	for k, v := range p.starts {
		out[k] = v
	}
	return out
}

// Prepare sets how many clusters of a shape to keep ready for a workshop's
// learners; n of 0 drops the demand, and its unclaimed clusters are deleted.
// With a mark from PrepareMark, the workshop's starts since are taken off
// n: a learner who joined after the count was read has a cluster already,
// and preparing one more for them would be made and then deleted.
func (e *Engine) Prepare(workshop int64, shape Shape, n int, mark map[int64]uint64) {
	p := e.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if mark != nil {
		n -= int(p.starts[workshop] - mark[workshop])
	}
	if n <= 0 {
		delete(p.demand, workshop)
		return
	}
	p.demand[workshop] = PoolTarget{Workers: shape.Workers, Worker: shape.Worker, Size: n}
}

// Prepared reports a workshop's prepared clusters.
func (e *Engine) Prepared(workshop int64) Prepared {
	p := e.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	out := Prepared{Target: p.demand[workshop].Size}
	for _, m := range p.members {
		if m.workshop != workshop {
			continue
		}
		switch m.state {
		case memberReady:
			out.Ready++
		case memberCreating:
			out.Creating++
		}
	}
	if len(p.creates) > 0 {
		var sum time.Duration
		for _, d := range p.creates {
			sum += d
		}
		out.MeanCreate = sum / time.Duration(len(p.creates))
		if left := out.Target - out.Ready; left > 0 {
			out.ETA = time.Duration(left) * out.MeanCreate
		}
	}
	return out
}

func (p *pool) create(m *member) {
	e := p.e
	ctx := e.ctx
	log := e.log.With("sandbox", m.name, "pool", true)
	e.writes.state(ctx, m.name, store.SandboxProvisioning, nil)
	start := time.Now()
	info, err := e.sandboxes.Create(ctx, sandbox.Spec{Name: m.name, Workers: m.shape.Workers, Worker: m.shape.Worker, Image: m.image}, func(ev sandbox.Event) {
		_ = e.store.AppendSandboxProgress(context.WithoutCancel(ctx), m.name, ev)
	})
	m.ticket.created()
	if err == nil {
		_ = e.store.SetSandboxNodes(ctx, m.name, info.Nodes)
		err = e.sandboxes.Hibernate(ctx, m.name)
	}
	if err != nil {
		if ctx.Err() != nil {
			return // the server stops; the next start finds the row and deletes the cluster
		}
		log.Error("pool cluster failed", "err", err)
		_ = e.sandboxes.Delete(context.WithoutCancel(ctx), m.name)
		m.ticket.release()
		e.writes.state(ctx, m.name, store.SandboxDeleted, nil)
		p.mu.Lock()
		delete(p.members, m.name)
		p.mu.Unlock()
		return
	}
	m.ticket.setHibernated(true)
	p.measured(time.Since(start))
	e.writes.state(ctx, m.name, store.SandboxHibernated, nil)
	p.mu.Lock()
	m.state = memberReady
	p.mu.Unlock()
	log.Info("pool cluster ready", "seconds", time.Since(start).Seconds())
}

// evictOne deletes an idle member so that a waiting learner gets its room.
func (p *pool) evictOne(ctx context.Context) {
	p.mu.Lock()
	var victim *member
	for _, m := range p.members {
		// Anyone's clusters go before a workshop's.
		if m.state == memberReady && (victim == nil || (victim.workshop != 0 && m.workshop == 0)) {
			victim = m
		}
	}
	if victim != nil {
		victim.state = memberClaimed // nobody else takes it now
	}
	p.mu.Unlock()
	if victim == nil {
		return
	}
	p.e.log.Info("evicting a pool cluster: a learner waits for room", "sandbox", victim.name)
	p.remove(ctx, victim)
}

// recoverMember takes back a pool cluster found at start-up: a hibernated
// one that Docker still has is kept, anything else is deleted.
func (p *pool) recoverMember(ctx context.Context, sb *store.Sandbox) error {
	p.mu.Lock()
	_, known := p.members[sb.Name]
	p.mu.Unlock()
	if known {
		return nil
	}
	if sb.State == store.SandboxHibernated && sb.Image == p.e.cfg.NodeImage {
		info, err := p.e.sandboxes.Get(ctx, sb.Name)
		if err != nil && !errors.Is(err, sandbox.ErrNotFound) {
			return dockerDown(err)
		}
		if err == nil && deadNodes(info) == "" {
			if info.State != sandbox.StatePaused {
				if err := p.e.sandboxes.Hibernate(ctx, sb.Name); err != nil {
					return dockerDown(err)
				}
			}
			tk := p.e.capacity.hold(sb.Name, CostOf(p.e.sandboxes, shapeOf(sb)), true)
			p.mu.Lock()
			p.members[sb.Name] = &member{name: sb.Name, shape: shapeOf(sb), image: sb.Image, state: memberReady, ticket: tk, workshop: sb.PoolWorkshop}
			p.mu.Unlock()
			p.e.log.Info("found pool cluster", "sandbox", sb.Name)
			return nil
		}
	}
	if err := p.e.sandboxes.Delete(ctx, sb.Name); err != nil {
		return dockerDown(err)
	}
	p.e.writes.state(ctx, sb.Name, store.SandboxDeleted, nil)
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
