package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/store"
)

// reap ends sessions past their deadline, hibernates idle clusters and warns
// sessions close to their end.
func (e *Engine) reap(ctx context.Context) {
	sessions, err := e.store.ActiveLabSessions(ctx)
	if err != nil {
		e.log.Error("list sessions", "err", err)
		return
	}
	now := time.Now()
	for _, s := range sessions {
		v, ok := e.lives.Load(s.ID)
		if !ok {
			continue
		}
		l := v.(*life)
		last := l.lastActivity(s.LastActivityAt)
		idleDeadline := last.Add(e.cfg.IdleTimeout)
		if s.WorkshopID != nil {
			// A workshop's session lasts until the workshop ends (a
			// lecture is not a forgotten tab); idle, it only hibernates.
			idleDeadline = s.ExpiresAt
		}
		switch {
		case now.After(s.ExpiresAt):
			e.endInBackground(s, "lifetime")
			continue
		case now.After(idleDeadline) && l.busy.Load() == 0:
			e.endInBackground(s, "idle")
			continue
		}
		deadline := idleDeadline
		if s.ExpiresAt.Before(deadline) {
			deadline = s.ExpiresAt
		}
		if left := deadline.Sub(now); left < e.cfg.WarnBefore {
			l.mu.Lock()
			warned := l.warned.Equal(deadline)
			l.warned = deadline
			l.mu.Unlock()
			if !warned {
				e.publish(s.ID, EventExpiring, map[string]any{"deadline": deadline, "secondsLeft": int(left.Seconds())})
			}
		}
		if now.Sub(last) > e.cfg.HibernateAfter && l.busy.Load() == 0 {
			e.hibernate(ctx, l)
		}
	}
	if _, err := e.store.DeleteExpiredWebSessions(ctx); err != nil {
		e.log.Error("delete expired sign-ins", "err", err)
	}
}

func (e *Engine) endInBackground(s *store.LabSession, reason string) {
	e.goBackground(func() {
		if err := e.End(e.ctx, s, reason); err != nil {
			e.log.Error("end session", "session", s.ID, "reason", reason, "err", err)
		}
	})
}

// hibernate freezes an idle session's ready cluster.
func (e *Engine) hibernate(ctx context.Context, l *life) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.phase != phaseReady || l.busy.Load() > 0 || time.Since(time.Unix(0, l.touched.Load())) <= e.cfg.HibernateAfter {
		return
	}
	if err := e.sandboxes.Hibernate(ctx, l.sandbox); err != nil {
		e.log.Error("hibernate", "sandbox", l.sandbox, "err", err)
		if errors.Is(err, sandbox.ErrNotFound) {
			e.failGoneLocked(l, msgVanished)
		}
		return
	}
	l.setPhase(phaseHibernated)
	l.ticket.setHibernated(true)
	e.writes.state(ctx, l.sandbox, store.SandboxHibernated, nil)
	e.publish(l.id, EventState, map[string]any{"state": store.SandboxHibernated})
	e.log.Info("sandbox hibernated", "session", l.id, "sandbox", l.sandbox)
}

// flushTouches writes the activity seen in memory to Postgres.
func (e *Engine) flushTouches(ctx context.Context) {
	e.lives.Range(func(k, v any) bool {
		l := v.(*life)
		t := l.touched.Load()
		if t <= l.flushed.Load() {
			return true
		}
		if err := e.store.TouchLabSessionAt(ctx, k.(uuid.UUID), time.Unix(0, t)); err != nil {
			e.log.Warn("record activity", "session", k, "err", err)
			return true
		}
		l.flushed.Store(t)
		return true
	})
}

// checkHealth asks Docker whether each ready or hibernated cluster's nodes
// still run. A cluster whose nodes exited (dockerd restarted, the OOM
// killer, someone's docker stop) is failed with a message, and Retry gives
// the learner a fresh one; one Docker no longer has is failed the same way.
// When Docker does not answer nothing is changed.
func (e *Engine) checkHealth(ctx context.Context) {
	e.lives.Range(func(_, v any) bool {
		l := v.(*life)
		l.mu.Lock()
		ph := l.phase
		l.mu.Unlock()
		if ph != phaseReady && ph != phaseHibernated {
			return true
		}
		info, err := e.sandboxes.Get(ctx, l.sandbox)
		msg := ""
		switch {
		case errors.Is(err, sandbox.ErrNotFound):
			msg = msgVanished
		case err != nil:
			e.log.Warn("ask Docker about a cluster", "sandbox", l.sandbox, "err", err)
			return true
		default:
			msg = deadNodes(info)
		}
		if msg == "" {
			return true
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.phase != ph {
			return true // changed meanwhile
		}
		e.log.Warn("cluster is broken", "session", l.id, "sandbox", l.sandbox, "why", msg)
		e.failGoneLocked(l, msg)
		return true
	})
}

// deadNodes says which nodes neither run nor are frozen, or "".
func deadNodes(info *sandbox.Info) string {
	var dead []string
	for _, n := range info.Nodes {
		if n.State != "running" && n.State != "paused" {
			dead = append(dead, n.Alias+" is "+n.State)
		}
	}
	if len(info.Nodes) == 0 {
		dead = append(dead, "no nodes")
	}
	if len(dead) == 0 {
		return ""
	}
	return fmt.Sprintf(msgDeadNode, strings.Join(dead, ", "))
}
