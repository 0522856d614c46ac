package session

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/podpath/podpath/grader"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/store"
)

// phase is where a session's cluster is in its life.
type phase int

const (
	phaseProvisioning phase = iota // queued, being created, or claimed from the pool and waking
	phaseReady
	phaseHibernated
	phaseFailed
	phaseEnding // the session ended; its cluster is being deleted
)

func (p phase) sandboxState() string {
	switch p {
	case phaseReady:
		return store.SandboxReady
	case phaseHibernated:
		return store.SandboxHibernated
	case phaseFailed:
		return store.SandboxFailed
	case phaseEnding:
		return store.SandboxExpiring
	}
	return store.SandboxProvisioning
}

// Messages a learner sees on a failed cluster.
const (
	msgVanished = "the cluster disappeared (deleted outside podpath): press Retry for a fresh one"
	msgDeadNode = "the cluster's node containers stopped (%s): press Retry for a fresh cluster"
	msgRecover  = "the cluster disappeared while the server was down: press Retry for a fresh one"
)

// life is one lab session's cluster from request to deletion. mu guards the
// phase and everything that changes with it; activity is atomic, so the
// keystroke path takes no lock.
type life struct {
	id      uuid.UUID
	userID  int64
	labID   string
	sandbox string
	shape   Shape

	mu       sync.Mutex
	lab      *labs.Lab
	phase    phase
	retry    bool               // the next provisioning deletes what a failed one left
	cancel   context.CancelFunc // cancels provisioning in flight
	provDone chan struct{}      // closed when provisioning in flight returns; nil when none
	ticket   *ticket            // the cluster's room on the host
	warned   time.Time          // the deadline the last expiry warning was for
	// settled is closed once a woken pool cluster's nodes are Ready again;
	// checks wait for it (the terminal does not). Nil when nothing waits.
	settled chan struct{}
	gr      *grader.Grader
	target  Target // the grader's, with its probe channels

	// attemptMu lets one check or skip run at a time.
	attemptMu sync.Mutex
	// busy counts attempts in progress: a check polling for a minute is
	// activity, and its cluster must not be frozen under it.
	busy       atomic.Int32
	touched    atomic.Int64 // unix nanoseconds of the latest activity seen
	flushed    atomic.Int64 // the latest activity written to Postgres
	hibernated atomic.Bool  // mirrors phase == phaseHibernated for Touch
	waking     atomic.Bool
}

// setPhase changes the phase. Callers hold mu.
func (l *life) setPhase(p phase) {
	l.phase = p
	l.hibernated.Store(p == phaseHibernated)
}

// lastActivity is the latest activity known, in memory or in Postgres.
func (l *life) lastActivity(db time.Time) time.Time {
	mem := time.Unix(0, l.touched.Load())
	if mem.After(db) {
		return mem
	}
	return db
}

// grader returns the session's grader, which keeps its Kubernetes clients.
func (e *Engine) grader(l *life) *grader.Grader {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gr == nil {
		l.target = e.sandboxes.Target(l.sandbox)
		l.gr = grader.New(l.target, l.lab)
	}
	return l.gr
}

// releaseRoomLocked gives the cluster's room on the host back (once; see
// ticket). Callers hold mu.
func (l *life) releaseRoomLocked() {
	l.ticket.release()
	l.ticket = nil
}

// closeTargetLocked ends the grader's probe channels; the next grader makes
// new ones. Callers hold mu.
func (l *life) closeTargetLocked() {
	if l.target != nil {
		l.target.Close()
	}
	l.target, l.gr = nil, nil
}
