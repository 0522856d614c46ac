package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/store"
)

// provisionLocked starts provisioning a session's cluster in the
// background: from the pool (claimed: wake it and wait for its nodes) or
// from scratch (wait for room, create). Callers hold l.mu.
func (e *Engine) provisionLocked(l *life, claimed bool) {
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan struct{})
	l.setPhase(phaseProvisioning)
	l.cancel, l.provDone = cancel, done
	l.closeTargetLocked()
	l.settled = nil
	e.goBackground(func() {
		defer close(done)
		defer cancel()
		e.provision(ctx, l, claimed)
		l.mu.Lock()
		if l.provDone == done {
			l.provDone, l.cancel = nil, nil
		}
		l.mu.Unlock()
	})
}

// provision makes the cluster ready and runs the lab's setup. Every state it
// writes is guarded by ctx: once the session ends (ctx cancelled), nothing
// here moves its sandbox to another state.
func (e *Engine) provision(ctx context.Context, l *life, claimed bool) {
	log := e.log.With("session", l.id, "sandbox", l.sandbox)
	progress := func(ev sandbox.Event) {
		if ctx.Err() != nil {
			return
		}
		if err := e.store.AppendSandboxProgress(context.WithoutCancel(ctx), l.sandbox, ev); err != nil {
			log.Warn("record progress", "err", err)
		}
		e.publish(l.id, EventProgress, ev)
	}
	setState := func(state string, errMsg *string) bool {
		if ctx.Err() != nil {
			return false
		}
		e.writes.state(ctx, l.sandbox, state, errMsg)
		e.publish(l.id, EventState, map[string]any{"state": state, "error": errMsg})
		return true
	}
	fail := func(err error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		log.Error("provisioning failed", "err", err)
		e.failLocked(l, err.Error())
	}

	start := time.Now()
	if claimed {
		if err := e.wakePooled(ctx, l, progress); err == nil {
			claimed = true
		} else if ctx.Err() != nil {
			return
		} else {
			// A pool cluster that does not wake is replaced by a fresh one.
			log.Warn("pool cluster did not wake; creating a fresh one", "err", err)
			l.mu.Lock()
			t := l.ticket
			l.ticket = nil
			l.retry = true
			l.mu.Unlock()
			t.release()
			claimed = false
		}
	}
	if !claimed {
		began, ok := e.create(ctx, l, progress, setState, fail)
		if !ok {
			return
		}
		start = began
	}

	l.mu.Lock()
	lab := l.lab
	l.mu.Unlock()
	progress(sandbox.Event{Stage: StageLabSetup, Title: "Lab setup", Elapsed: time.Since(start)})
	setup := lab.Setup
	if lab.Killercoda && e.cfg.TrafficPattern != nil {
		// As on Killercoda: `sed 's/PORT/8080/' /etc/killercoda/host`
		// prints the address of the app on port 8080, before the
		// scenario's own background script runs.
		setup = append([]labs.Action{labs.KillercodaHost(e.cfg.TrafficPattern(l.id))}, setup...)
	}
	if err := e.grader(l).Run(ctx, setup, nil); err != nil {
		progress(sandbox.Event{Stage: StageLabSetup, Title: "Lab setup", Done: true, Failed: true, Elapsed: time.Since(start)})
		fail(fmt.Errorf("lab setup: %w", err))
		return
	}
	progress(sandbox.Event{Stage: StageLabSetup, Title: "Lab setup", Done: true, Elapsed: time.Since(start)})

	l.mu.Lock()
	if ctx.Err() != nil || l.phase != phaseProvisioning {
		l.mu.Unlock()
		return
	}
	l.setPhase(phaseReady)
	l.mu.Unlock()
	// The learner has been waiting, not idle: the idle clock starts now, or
	// the reaper would freeze a cluster that just came up.
	l.touched.Store(time.Now().UnixNano())
	e.metrics.provisionSeconds.Observe(time.Since(start).Seconds())
	log.Info("sandbox ready", "seconds", time.Since(start).Seconds(), "fromPool", claimed)
	setState(store.SandboxReady, nil)
}

// wakePooled resumes a claimed pool cluster. The terminal and the lab's
// setup need only the node containers and the API server (about a second);
// the nodes' Ready comes later, because a control plane frozen for a while
// wakes with stale node leases and its node controller may mark the nodes
// NotReady for some seconds before kubelet's status wins. So Ready is waited
// for in the background, and checks wait for it (settled).
func (e *Engine) wakePooled(ctx context.Context, l *life, progress func(sandbox.Event)) error {
	start := time.Now()
	progress(sandbox.Event{Stage: StageClaim, Title: "Prepared cluster wakes up", Elapsed: 0})
	e.writes.state(ctx, l.sandbox, store.SandboxProvisioning, nil)
	e.publish(l.id, EventState, map[string]any{"state": store.SandboxProvisioning})
	if err := e.sandboxes.Resume(ctx, l.sandbox); err != nil {
		return err
	}
	l.mu.Lock()
	l.ticket.setHibernated(false)
	l.mu.Unlock()
	if err := e.sandboxes.WaitAPI(ctx, l.sandbox, time.Minute); err != nil {
		return err
	}
	settled := make(chan struct{})
	l.mu.Lock()
	l.settled = settled
	l.mu.Unlock()
	e.goBackground(func() {
		defer close(settled)
		err := e.sandboxes.WaitReady(ctx, l.sandbox, 2*time.Minute)
		if err == nil || ctx.Err() != nil {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		e.failLocked(l, fmt.Sprintf("the prepared cluster's nodes are not Ready after waking (%v): press Retry for a fresh cluster", err))
	})
	progress(sandbox.Event{Stage: StageClaim, Title: "Prepared cluster wakes up", Done: true, Elapsed: time.Since(start)})
	return nil
}

// waitSettled waits until a woken pool cluster's nodes are Ready again.
func (l *life) waitSettled(ctx context.Context) {
	l.mu.Lock()
	ch := l.settled
	l.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

// create waits for room and makes the session's cluster, and says whether
// it did. A start the host's scheduler finds no room for, though the
// capacity model did (sandbox.ErrNoRoom: the pool's other Pods take more
// than the model knows), goes back to the queue until another cluster
// ends; where no other cluster is there to end, it fails with the
// scheduler's reason.
// began is when the create that made it started.
func (e *Engine) create(ctx context.Context, l *life, progress func(sandbox.Event), setState func(string, *string) bool, fail func(error)) (began time.Time, ok bool) {
	log := e.log.With("session", l.id, "sandbox", l.sandbox)
	for {
		t, err := e.capacity.acquire(ctx, l.sandbox, CostOf(e.sandboxes, l.shape), func(pos int) {
			e.publish(l.id, EventQueue, map[string]int{"position": pos})
		})
		if err != nil {
			if ctx.Err() == nil {
				fail(err) // it can never fit
			}
			return time.Time{}, false // else the session ended, or the server is stopping
		}
		l.mu.Lock()
		if ctx.Err() != nil {
			l.mu.Unlock()
			t.release()
			return time.Time{}, false
		}
		l.ticket = t
		retry := l.retry
		l.retry = false
		l.mu.Unlock()
		if retry {
			if err := e.sandboxes.Delete(ctx, l.sandbox); err != nil {
				t.created()
				fail(fmt.Errorf("delete the failed cluster before making a new one: %w", err))
				return time.Time{}, false
			}
		}
		if !setState(store.SandboxProvisioning, nil) {
			t.created()
			return time.Time{}, false
		}
		if err := e.store.ResetSandboxProgress(ctx, l.sandbox); err != nil {
			log.Warn("reset progress", "err", err)
		}
		began = time.Now()
		info, err := e.sandboxes.Create(ctx, sandbox.Spec{Name: l.sandbox, Workers: l.shape.Workers, Worker: l.shape.Worker, Image: e.cfg.NodeImage}, progress)
		t.created()
		if err == nil {
			if err := e.store.SetSandboxNodes(ctx, l.sandbox, info.Nodes); err != nil {
				log.Error("record nodes", "err", err)
			}
			return began, true
		}
		// Create deleted what it made: the room goes back.
		l.mu.Lock()
		if l.ticket == t {
			l.ticket = nil
		}
		l.mu.Unlock()
		t.release()
		if ctx.Err() != nil {
			return time.Time{}, false
		}
		gen, others := e.capacity.releases()
		if !errors.Is(err, sandbox.ErrNoRoom) || others == 0 {
			if errors.Is(err, sandbox.ErrNoRoom) {
				err = fmt.Errorf("%w; no other learner cluster is there to make room, so the pool's nodes are too full or too small for this cluster", err)
			}
			fail(err)
			return time.Time{}, false
		}
		log.Info("the host's scheduler has no room for this cluster; waiting for another to end", "err", err, "clusters", others)
		if !setState(store.SandboxRequested, nil) {
			return time.Time{}, false
		}
		e.publish(l.id, EventQueue, map[string]int{"position": 1})
		if err := e.capacity.waitRelease(ctx, gen, noRoomRetry); err != nil {
			return time.Time{}, false
		}
	}
}

// noRoomRetry is how long a start the host's scheduler had no room for
// waits for another cluster to end before it tries again anyway (the
// pool's other Pods may have gone).
const noRoomRetry = 2 * time.Minute
