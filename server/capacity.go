package server

import (
	"context"
	"sync"
)

// cost is what one learner cluster takes from the host.
type cost struct {
	CPU    float64 // cores, while running
	Memory int     // MiB, running or hibernated
}

// clusterCost estimates a cluster's cost from its shape (measured: an idle
// control plane takes about 13% of a core and 500 MiB, a worker 2-5% and
// 100 MiB; see docs/PERFORMANCE.md).
func clusterCost(workers int) cost {
	return cost{CPU: 0.15 + 0.05*float64(workers), Memory: 600 + 150*workers}
}

// capacity admits new clusters while the host has room: running clusters
// count against CPU and memory, hibernated ones against memory only, and at
// most `slots` clusters are created at once. Waiters are served in order.
type capacity struct {
	mu      sync.Mutex
	cpu     float64
	memory  int
	slots   int
	busy    int
	holders map[string]*holder
	queue   []*waiter
	// sig is closed and replaced at every change, waking position watchers.
	sig chan struct{}
}

type holder struct {
	cost       cost
	hibernated bool
}

type waiter struct {
	name  string
	cost  cost
	ready chan struct{}
}

func newCapacity(cpu float64, memory, slots int) *capacity {
	return &capacity{cpu: cpu, memory: memory, slots: slots, holders: map[string]*holder{}, sig: make(chan struct{})}
}

func (c *capacity) used() (cpu float64, mem int) {
	for _, h := range c.holders {
		mem += h.cost.Memory
		if !h.hibernated {
			cpu += h.cost.CPU
		}
	}
	return
}

// fits reports whether w can start now. An empty host always admits one
// cluster, so a small capacity setting never blocks every learner.
func (c *capacity) fits(w *waiter) bool {
	if c.busy >= c.slots {
		return false
	}
	if len(c.holders) == 0 {
		return true
	}
	cpu, mem := c.used()
	return cpu+w.cost.CPU <= c.cpu && mem+w.cost.Memory <= c.memory
}

// wake admits waiters from the head of the queue while they fit, and tells
// watchers something changed. Callers hold mu.
func (c *capacity) wake() {
	close(c.sig)
	c.sig = make(chan struct{})
	for len(c.queue) > 0 && c.fits(c.queue[0]) {
		w := c.queue[0]
		c.queue = c.queue[1:]
		c.busy++
		c.holders[w.name] = &holder{cost: w.cost}
		close(w.ready)
	}
}

// acquire waits for room for a cluster. onPosition reports the 1-based queue
// position whenever it changes while waiting. done must be called once the
// cluster is created (or failed); release when it is deleted.
func (c *capacity) acquire(ctx context.Context, name string, cs cost, onPosition func(int)) (done func(), err error) {
	w := &waiter{name: name, cost: cs, ready: make(chan struct{})}
	c.mu.Lock()
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
			var once sync.Once
			return func() {
				once.Do(func() {
					c.mu.Lock()
					c.busy--
					c.wake()
					c.mu.Unlock()
				})
			}, nil
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
			case <-w.ready: // admitted meanwhile: give the slot back
				c.mu.Lock()
				c.busy--
				delete(c.holders, name)
				c.wake()
				c.mu.Unlock()
			default:
			}
			return nil, ctx.Err()
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
		if w.name == name {
			return i + 1
		}
	}
	return 0
}

// hold registers a cluster that already exists (found at start-up).
func (c *capacity) hold(name string, cs cost, hibernated bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holders[name] = &holder{cost: cs, hibernated: hibernated}
}

// setHibernated moves a cluster between running and hibernated.
func (c *capacity) setHibernated(name string, hibernated bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.holders[name]; h != nil {
		h.hibernated = hibernated
	}
	c.wake()
}

// release gives a deleted cluster's room back.
func (c *capacity) release(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.holders, name)
	c.wake()
}

// snapshot reports use, for metrics and the admin view.
func (c *capacity) snapshot() (usedCPU float64, usedMem, running, hibernated, queued int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	usedCPU, usedMem = c.used()
	for _, h := range c.holders {
		if h.hibernated {
			hibernated++
		} else {
			running++
		}
	}
	return usedCPU, usedMem, running, hibernated, len(c.queue)
}
