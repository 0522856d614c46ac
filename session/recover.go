package session

import (
	"context"
	"errors"
	"strings"

	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/store"
)

// recover finds the clusters of active sessions and of the warm pool after a
// restart: ready and hibernated ones are kept, interrupted provisioning
// starts over, clusters that vanished are marked failed, and clusters no
// session owns are deleted. Docker is asked first: when it does not answer,
// nothing is marked or deleted (a host just rebooted may start dockerd
// after podpath), and the error says so. Running it again is safe.
func (e *Engine) recover(ctx context.Context) error {
	all, err := e.store.UndeletedSandboxes(ctx)
	if err != nil {
		return err
	}
	known := make([]string, 0, len(all))
	for _, sb := range all {
		known = append(known, sb.Name)
	}
	orphans, err := e.sandboxes.Reconcile(ctx, known)
	if err != nil {
		return dockerDown(err)
	}
	for _, sb := range all {
		if _, ok := e.lives.Load(sb.LabSessionID); ok {
			continue // found by an earlier try
		}
		if sb.Pool && sb.LabSessionID == [16]byte{} {
			if err := e.pool.recoverMember(ctx, sb); err != nil {
				return err
			}
			continue
		}
		if err := e.recoverSession(ctx, sb); err != nil {
			return err
		}
	}
	for _, o := range orphans {
		if !strings.HasPrefix(o, e.namePrefix()) {
			continue // another server's, or a CLI or test sandbox
		}
		e.log.Warn("deleting a cluster no session owns", "sandbox", o)
		if err := e.sandboxes.Delete(ctx, o); err != nil {
			e.log.Error("delete orphan", "sandbox", o, "err", err)
		}
	}
	return nil
}

func (e *Engine) recoverSession(ctx context.Context, sb *store.Sandbox) error {
	sess, err := e.store.LabSession(ctx, sb.LabSessionID)
	if err != nil {
		return err
	}
	lab := e.SessionLab(sess)
	if sess.State != store.SessionActive || lab == nil {
		if err := e.sandboxes.Delete(ctx, sb.Name); err != nil {
			return dockerDown(err)
		}
		e.writes.state(ctx, sb.Name, store.SandboxDeleted, nil)
		if lab == nil && sess.State == store.SessionActive {
			if err := e.store.EndLabSession(ctx, sess.ID, "lab removed"); err != nil {
				return err
			}
		}
		return nil
	}
	l := &life{id: sess.ID, userID: sess.UserID, labID: sess.LabID, lab: lab, sandbox: sb.Name, shape: shapeOf(sb)}
	l.touched.Store(sess.LastActivityAt.UnixNano())
	l.flushed.Store(sess.LastActivityAt.UnixNano())
	switch sb.State {
	case store.SandboxFailed:
		l.setPhase(phaseFailed)
		e.lives.Store(l.id, l)
	case store.SandboxRequested, store.SandboxProvisioning:
		e.log.Info("provisioning was interrupted; starting over", "sandbox", sb.Name)
		l.mu.Lock()
		l.retry = true // delete what the interrupted create made
		e.lives.Store(l.id, l)
		e.provisionLocked(l, false)
		l.mu.Unlock()
	default: // ready, hibernated, expiring
		info, err := e.sandboxes.Get(ctx, sb.Name)
		if errors.Is(err, sandbox.ErrNotFound) {
			msg := msgRecover
			e.writes.state(ctx, sb.Name, store.SandboxFailed, &msg)
			l.setPhase(phaseFailed)
			e.lives.Store(l.id, l)
			return nil
		}
		if err != nil {
			return dockerDown(err)
		}
		hibernated := info.State == sandbox.StatePaused
		l.ticket = e.capacity.hold(sb.Name, CostOf(e.sandboxes, shapeOf(sb)), hibernated)
		l.setPhase(phaseReady)
		if hibernated {
			l.setPhase(phaseHibernated)
		}
		e.lives.Store(l.id, l)
		if sb.State == store.SandboxExpiring {
			e.endInBackground(sess, "lifetime")
			return nil
		}
		if msg := deadNodes(info); msg != "" {
			l.mu.Lock()
			e.failGoneLocked(l, msg)
			l.mu.Unlock()
			return nil
		}
		if state := l.phase.sandboxState(); state != sb.State {
			e.writes.state(ctx, sb.Name, state, nil)
		}
		e.log.Info("found cluster of active session", "sandbox", sb.Name, "state", l.phase.sandboxState())
	}
	return nil
}
