package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/podpath/podpath/grader"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/store"
)

// Sandboxes is what the platform needs of the sandbox manager.
type Sandboxes interface {
	Create(ctx context.Context, spec sandbox.Spec, progress func(sandbox.Event)) (*sandbox.Info, error)
	Delete(ctx context.Context, name string) error
	Get(ctx context.Context, name string) (*sandbox.Info, error)
	Hibernate(ctx context.Context, name string) error
	Resume(ctx context.Context, name string) error
	Reconcile(ctx context.Context, known []string) ([]string, error)
	Target(name string) *sandbox.Target
}

// StageLabSetup is the provisioning stage that runs the lab's setup actions.
const StageLabSetup = "lab-setup"

// platform runs lab sessions: it provisions their sandboxes within the
// host's capacity, runs lab setup, grades steps, hibernates idle clusters,
// ends forgotten sessions, and finds its clusters again after a restart.
type platform struct {
	cfg       Config
	instance  string
	store     *store.Store
	sandboxes Sandboxes
	labs      []*labs.Lab
	hub       *hub
	capacity  *capacity
	metrics   *metrics
	log       *slog.Logger
	ctx       context.Context // the server's lifetime

	// onEnd closes a session's terminals.
	onEnd func(uuid.UUID)

	mu       sync.Mutex
	graders  map[uuid.UUID]*grader.Grader
	checking map[uuid.UUID]*sync.Mutex
	warned   map[uuid.UUID]time.Time
	touched  map[uuid.UUID]time.Time
	ending   map[uuid.UUID]bool
	// busy counts attempts in progress: a check polling for a minute is
	// activity, and its cluster must not be frozen under it.
	busy map[uuid.UUID]int
	wg   sync.WaitGroup
}

func (p *platform) lab(id string) *labs.Lab { return labs.Find(p.labs, id) }

// sandboxName names a session's cluster: ls-<instance>-<session>. The
// instance part keeps servers sharing a Docker engine apart.
func (p *platform) sandboxName(id uuid.UUID) string {
	return p.namePrefix() + strings.ReplaceAll(id.String(), "-", "")[:12]
}

func (p *platform) namePrefix() string { return "ls-" + p.instance + "-" }

// Start creates a lab session for the user and starts provisioning its
// cluster. A learner with an active session gets store.ErrActiveSession.
func (p *platform) Start(ctx context.Context, u *store.User, lab *labs.Lab) (*store.LabSession, error) {
	id := uuid.New()
	sess, err := p.store.CreateLabSession(ctx, store.NewLabSession{
		ID: id, UserID: u.ID, LabID: lab.ID, Lifetime: p.cfg.MaxLifetime, IdleTimeout: p.cfg.IdleTimeout,
		SandboxName: p.sandboxName(id), Image: p.cfg.NodeImage, Workers: lab.Cluster.Workers,
	})
	if err != nil {
		return nil, err
	}
	p.log.Info("lab session started", "session", sess.ID, "user", u.ID, "lab", lab.ID)
	p.goProvision(sess.ID, p.sandboxName(sess.ID), lab)
	return sess, nil
}

func (p *platform) goProvision(id uuid.UUID, name string, lab *labs.Lab) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.provision(id, name, lab)
	}()
}

// provision waits for room, creates the cluster, records its progress, and
// runs the lab's setup.
func (p *platform) provision(id uuid.UUID, name string, lab *labs.Lab) {
	ctx := p.ctx
	log := p.log.With("session", id, "sandbox", name)
	setState := func(state string, errMsg *string) {
		if err := p.store.SetSandboxState(context.WithoutCancel(ctx), name, state, errMsg); err != nil {
			log.Error("record sandbox state", "state", state, "err", err)
		}
		p.hub.publish(id, Event{Type: EventState, Data: map[string]any{"state": state, "error": errMsg}})
		p.metrics.refreshStates(p.store)
	}
	fail := func(err error) {
		msg := err.Error()
		log.Error("provisioning failed", "err", err)
		setState(store.SandboxFailed, &msg)
	}
	progress := func(e sandbox.Event) {
		if err := p.store.AppendSandboxProgress(context.WithoutCancel(ctx), name, e); err != nil {
			log.Error("record progress", "err", err)
		}
		p.hub.publish(id, Event{Type: EventProgress, Data: e})
	}

	done, err := p.capacity.acquire(ctx, name, clusterCost(lab.Cluster.Workers), func(pos int) {
		p.hub.publish(id, Event{Type: EventQueue, Data: map[string]int{"position": pos}})
	})
	if err != nil {
		return // server shutting down; the restart provisions again
	}
	defer done()
	start := time.Now()
	setState(store.SandboxProvisioning, nil)
	_ = p.store.ResetSandboxProgress(ctx, name)
	info, err := p.sandboxes.Create(ctx, sandbox.Spec{Name: name, Workers: lab.Cluster.Workers, Image: p.cfg.NodeImage}, progress)
	if err != nil {
		p.capacity.release(name)
		if ctx.Err() != nil {
			return
		}
		fail(err)
		return
	}
	if err := p.store.SetSandboxNodes(ctx, name, info.Nodes); err != nil {
		log.Error("record nodes", "err", err)
	}
	setupStart := time.Now()
	progress(sandbox.Event{Stage: StageLabSetup, Title: "Lab setup", Elapsed: time.Since(start)})
	if err := p.grader(id, name, lab).Run(ctx, lab.Setup, nil); err != nil {
		progress(sandbox.Event{Stage: StageLabSetup, Title: "Lab setup", Done: true, Failed: true, Elapsed: time.Since(start)})
		fail(fmt.Errorf("lab setup: %w", err))
		return
	}
	progress(sandbox.Event{Stage: StageLabSetup, Title: "Lab setup", Done: true, Elapsed: time.Since(start)})
	p.metrics.provisionSeconds.Observe(time.Since(start).Seconds())
	// The learner has been waiting, not idle: the idle clock starts now, or
	// the reaper would freeze a cluster that just came up.
	if err := p.store.TouchLabSession(ctx, id); err != nil {
		log.Error("touch session", "err", err)
	}
	log.Info("sandbox ready", "seconds", time.Since(start).Seconds(), "setupSeconds", time.Since(setupStart).Seconds())
	setState(store.SandboxReady, nil)
}

// grader returns the session's grader, which keeps its Kubernetes clients.
func (p *platform) grader(id uuid.UUID, name string, lab *labs.Lab) *grader.Grader {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.graders[id]
	if g == nil {
		g = grader.New(p.sandboxes.Target(name), lab)
		p.graders[id] = g
	}
	return g
}

func (p *platform) sessionLock(id uuid.UUID) *sync.Mutex {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.checking[id]
	if m == nil {
		m = &sync.Mutex{}
		p.checking[id] = m
	}
	return m
}

// Touch records learner activity (at most every 20 s per session) and wakes
// a hibernated cluster.
func (p *platform) Touch(ctx context.Context, sess *store.LabSession) {
	p.mu.Lock()
	last := p.touched[sess.ID]
	now := time.Now()
	if now.Sub(last) < 20*time.Second {
		p.mu.Unlock()
		return
	}
	p.touched[sess.ID] = now
	p.mu.Unlock()
	if err := p.store.TouchLabSession(ctx, sess.ID); err != nil {
		p.log.Error("touch session", "err", err)
	}
	_ = p.ensureAwake(ctx, sess.ID)
}

// ensureAwake resumes a hibernated cluster.
func (p *platform) ensureAwake(ctx context.Context, id uuid.UUID) error {
	sb, err := p.store.SandboxOf(ctx, id)
	if err != nil {
		return err
	}
	if sb.State != store.SandboxHibernated {
		return nil
	}
	// Waking is activity: record it first, so the reaper does not freeze
	// the cluster again before the work that woke it has begun.
	if err := p.store.TouchLabSession(ctx, id); err != nil {
		return err
	}
	p.mu.Lock()
	p.touched[id] = time.Now()
	p.mu.Unlock()
	if err := p.sandboxes.Resume(ctx, sb.Name); err != nil {
		return fmt.Errorf("wake the cluster: %w", err)
	}
	p.capacity.setHibernated(sb.Name, false)
	_ = p.store.SetSandboxState(ctx, sb.Name, store.SandboxReady, nil)
	p.hub.publish(id, Event{Type: EventState, Data: map[string]any{"state": store.SandboxReady}})
	p.log.Info("sandbox resumed", "session", id, "sandbox", sb.Name)
	return nil
}

// errNotReady is returned for work that needs a ready cluster.
var errNotReady = errors.New("the cluster is not ready yet")

// Attempt checks a step (skip=false) or runs its solve and then checks it
// (skip=true), records the attempt, and returns it.
func (p *platform) Attempt(ctx context.Context, sess *store.LabSession, stepID, answer string, skip bool) (*store.Attempt, error) {
	lab := p.lab(sess.LabID)
	if lab == nil {
		return nil, fmt.Errorf("lab %s is no longer installed on this server", sess.LabID)
	}
	var step *labs.Step
	for i := range lab.Steps {
		if lab.Steps[i].ID == stepID {
			step = &lab.Steps[i]
		}
	}
	if step == nil {
		return nil, apiError(404, fmt.Sprintf("lab %s has no step %q", lab.ID, stepID))
	}
	if skip && step.NoSkip {
		return nil, apiError(403, "this step cannot be skipped")
	}
	if err := p.ensureAwake(ctx, sess.ID); err != nil {
		return nil, err
	}
	sb, err := p.store.SandboxOf(ctx, sess.ID)
	if err != nil {
		return nil, err
	}
	if sb.State != store.SandboxReady {
		return nil, apiError(409, fmt.Sprintf("%s (it is %s)", errNotReady, sb.State))
	}
	lock := p.sessionLock(sess.ID)
	lock.Lock()
	defer lock.Unlock()
	p.mu.Lock()
	p.busy[sess.ID]++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.busy[sess.ID]--
		if p.busy[sess.ID] == 0 {
			delete(p.busy, sess.ID)
		}
		delete(p.touched, sess.ID) // so the Touch below is not throttled
		p.mu.Unlock()
		p.Touch(context.WithoutCancel(ctx), sess)
	}()
	p.Touch(ctx, sess)

	statuses, err := p.store.StepStatuses(ctx, sess.ID)
	if err != nil {
		return nil, err
	}
	g := p.grader(sess.ID, sb.Name, lab)
	start := time.Now()
	a := &store.Attempt{LabSessionID: sess.ID, StepID: stepID, Kind: store.AttemptCheck}
	if skip {
		a.Kind = store.AttemptSkip
		if err := g.Run(ctx, step.Solve, &answer); err != nil {
			msg := "the step's solve failed: " + err.Error()
			a.Error = &msg
		}
	}
	if answer != "" {
		a.Answer = &answer
	}
	var results []grader.Result
	if a.Error == nil {
		results = g.CheckStep(ctx, step, grader.Options{Answer: answer, Attempt: statuses[stepID].Attempts + 1})
		a.Passed = grader.Passed(results)
	}
	a.Duration = time.Since(start)
	for _, r := range results {
		name, _ := json.Marshal(r.Name)
		var fb json.RawMessage
		if len(r.Feedback) > 0 {
			fb, _ = json.Marshal(r.Feedback)
		}
		a.Results = append(a.Results, store.CheckResult{Index: r.Index, Name: name, Passed: r.Passed, Observed: r.Observed, Feedback: fb, ProbeError: r.ProbeError, Duration: r.Duration})
		p.metrics.checkSeconds.Observe(r.Duration.Seconds())
	}
	if err := p.store.RecordAttempt(ctx, a); err != nil {
		return nil, err
	}
	p.hub.publish(sess.ID, Event{Type: EventAttempt, Data: a})
	return a, nil
}

// End ends a session and deletes its cluster.
func (p *platform) End(ctx context.Context, sess *store.LabSession, reason string) error {
	p.mu.Lock()
	if p.ending[sess.ID] {
		p.mu.Unlock()
		return nil
	}
	p.ending[sess.ID] = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.ending, sess.ID)
		delete(p.graders, sess.ID)
		delete(p.checking, sess.ID)
		delete(p.warned, sess.ID)
		delete(p.touched, sess.ID)
		p.mu.Unlock()
	}()
	if err := p.store.EndLabSession(ctx, sess.ID, reason); err != nil {
		return err
	}
	p.hub.publish(sess.ID, Event{Type: EventEnded, Data: map[string]string{"reason": reason}})
	if p.onEnd != nil {
		p.onEnd(sess.ID)
	}
	sb, err := p.store.SandboxOf(ctx, sess.ID)
	if err != nil {
		return err
	}
	_ = p.store.SetSandboxState(ctx, sb.Name, store.SandboxExpiring, nil)
	if err := p.sandboxes.Delete(ctx, sb.Name); err != nil {
		msg := "delete: " + err.Error()
		_ = p.store.SetSandboxState(ctx, sb.Name, store.SandboxFailed, &msg)
		return err
	}
	p.capacity.release(sb.Name)
	_ = p.store.SetSandboxState(ctx, sb.Name, store.SandboxDeleted, nil)
	p.metrics.refreshStates(p.store)
	p.log.Info("lab session ended", "session", sess.ID, "reason", reason)
	return nil
}

// Retry provisions a failed session's cluster again.
func (p *platform) Retry(ctx context.Context, sess *store.LabSession) error {
	sb, err := p.store.SandboxOf(ctx, sess.ID)
	if err != nil {
		return err
	}
	if sb.State != store.SandboxFailed {
		return apiError(409, "only a failed cluster can be retried; this one is "+sb.State)
	}
	lab := p.lab(sess.LabID)
	if lab == nil {
		return apiError(410, "lab "+sess.LabID+" is no longer installed on this server")
	}
	_ = p.sandboxes.Delete(ctx, sb.Name)
	_ = p.store.SetSandboxState(ctx, sb.Name, store.SandboxRequested, nil)
	p.goProvision(sess.ID, sb.Name, lab)
	return nil
}

// reap ends sessions past their deadline, hibernates idle clusters and warns
// sessions close to their end. It runs every few seconds.
func (p *platform) reap(ctx context.Context) {
	sessions, err := p.store.ActiveLabSessions(ctx)
	if err != nil {
		p.log.Error("list sessions", "err", err)
		return
	}
	now := time.Now()
	for _, s := range sessions {
		switch {
		case now.After(s.ExpiresAt):
			go p.End(context.WithoutCancel(ctx), s, "lifetime")
			continue
		case now.After(s.IdleDeadline(p.cfg.IdleTimeout)):
			go p.End(context.WithoutCancel(ctx), s, "idle")
			continue
		}
		deadline := s.Deadline(p.cfg.IdleTimeout)
		if left := deadline.Sub(now); left < p.cfg.WarnBefore {
			p.mu.Lock()
			warned := p.warned[s.ID].Equal(deadline)
			p.warned[s.ID] = deadline
			p.mu.Unlock()
			if !warned {
				p.hub.publish(s.ID, Event{Type: EventExpiring, Data: map[string]any{"deadline": deadline, "secondsLeft": int(left.Seconds())}})
			}
		}
		if now.Sub(s.LastActivityAt) > p.cfg.HibernateAfter {
			// Read again: the learner may have come back since the list.
			if fresh, err := p.store.LabSession(ctx, s.ID); err != nil || time.Since(fresh.LastActivityAt) <= p.cfg.HibernateAfter {
				continue
			}
			p.mu.Lock()
			busy := p.busy[s.ID] > 0
			p.mu.Unlock()
			if busy {
				continue
			}
			sb, err := p.store.SandboxOf(ctx, s.ID)
			if err == nil && sb.State == store.SandboxReady {
				if err := p.sandboxes.Hibernate(ctx, sb.Name); err != nil {
					p.log.Error("hibernate", "sandbox", sb.Name, "err", err)
					if errors.Is(err, sandbox.ErrNotFound) {
						msg := "the cluster disappeared (deleted outside podpath): end this session and start the lab again"
						_ = p.store.SetSandboxState(ctx, sb.Name, store.SandboxFailed, &msg)
						p.capacity.release(sb.Name)
						p.hub.publish(s.ID, Event{Type: EventState, Data: map[string]any{"state": store.SandboxFailed, "error": msg}})
					}
					continue
				}
				p.capacity.setHibernated(sb.Name, true)
				_ = p.store.SetSandboxState(ctx, sb.Name, store.SandboxHibernated, nil)
				p.hub.publish(s.ID, Event{Type: EventState, Data: map[string]any{"state": store.SandboxHibernated}})
				p.log.Info("sandbox hibernated", "session", s.ID, "sandbox", sb.Name)
			}
		}
	}
	if _, err := p.store.DeleteExpiredWebSessions(ctx); err != nil {
		p.log.Error("delete expired sign-ins", "err", err)
	}
	p.metrics.refreshStates(p.store)
}

// recover finds the clusters of active sessions after a restart: ready and
// hibernated ones are kept, interrupted provisioning starts over, clusters
// that vanished are marked failed, and clusters no session owns are deleted.
func (p *platform) recover(ctx context.Context) error {
	live, err := p.store.LiveSandboxes(ctx)
	if err != nil {
		return err
	}
	var known []string
	for _, sb := range live {
		known = append(known, sb.Name)
		sess, err := p.store.LabSession(ctx, sb.LabSessionID)
		if err != nil {
			return err
		}
		lab := p.lab(sess.LabID)
		if sess.State != store.SessionActive || lab == nil {
			_ = p.sandboxes.Delete(ctx, sb.Name)
			_ = p.store.SetSandboxState(ctx, sb.Name, store.SandboxDeleted, nil)
			if lab == nil && sess.State == store.SessionActive {
				_ = p.store.EndLabSession(ctx, sess.ID, "lab removed")
			}
			continue
		}
		switch sb.State {
		case store.SandboxRequested, store.SandboxProvisioning:
			p.log.Info("provisioning was interrupted; starting over", "sandbox", sb.Name)
			_ = p.sandboxes.Delete(ctx, sb.Name)
			p.goProvision(sess.ID, sb.Name, lab)
		case store.SandboxReady, store.SandboxHibernated, store.SandboxExpiring:
			info, err := p.sandboxes.Get(ctx, sb.Name)
			if err != nil {
				msg := "the cluster disappeared while the server was down: end this session and start the lab again"
				_ = p.store.SetSandboxState(ctx, sb.Name, store.SandboxFailed, &msg)
				continue
			}
			if sb.State == store.SandboxExpiring {
				go p.End(context.WithoutCancel(ctx), sess, "lifetime")
				continue
			}
			hibernated := info.State == sandbox.StatePaused
			p.capacity.hold(sb.Name, clusterCost(sb.Workers), hibernated)
			state := store.SandboxReady
			if hibernated {
				state = store.SandboxHibernated
			}
			_ = p.store.SetSandboxState(ctx, sb.Name, state, nil)
			p.log.Info("found cluster of active session", "sandbox", sb.Name, "state", state)
		}
	}
	orphans, err := p.sandboxes.Reconcile(ctx, known)
	if err != nil {
		return err
	}
	for _, o := range orphans {
		if !strings.HasPrefix(o, p.namePrefix()) {
			continue // another server's, or a CLI or test sandbox
		}
		p.log.Warn("deleting a cluster no session owns", "sandbox", o)
		if err := p.sandboxes.Delete(ctx, o); err != nil {
			p.log.Error("delete orphan", "sandbox", o, "err", err)
		}
	}
	p.metrics.refreshStates(p.store)
	return nil
}
