package session

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

	"github.com/podpath/podpath/bus"
	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/replica"
	"github.com/podpath/podpath/store"
)

// LeaseEngine is the lease of the replica whose engine runs the clusters.
const LeaseEngine = "engine"

// Sessions is the session engine as every replica's server sees it. The
// replica that holds the engine lease runs an Engine (clusters, capacity,
// the warm pool, the reaper, recovery); the others ask it over the bus.
// Events reach lab pages on every replica through the bus, and work that
// must run once (Leading) runs on the leader only. With one replica it
// leads at once and everything is local.
type Sessions struct {
	cfg     Config
	deps    Deps
	bus     Bus
	rep     *replica.Replica
	log     *slog.Logger
	metrics *Metrics
	remote  *remote

	mu      sync.RWMutex
	local   *Engine // while this replica leads and its engine is open
	openErr error   // while it leads and the engine cannot open yet
	leading []func(ctx context.Context)
	onEnd   []func(uuid.UUID)
	started []StartedFunc
	tried   []AttemptedFunc

	touchMu sync.Mutex
	touched map[uuid.UUID]time.Time // keys seen here, not yet told the leader
	seen    map[uuid.UUID]time.Time // the latest activity seen here
}

// NewSessions makes the engine of a replica. deps.Events is set here: the
// bus's.
func NewSessions(cfg Config, deps Deps, b Bus, rep *replica.Replica) *Sessions {
	if deps.Log == nil {
		deps.Log = slog.Default()
	}
	deps.Events = NewBusEvents(b, deps.Store, deps.Log)
	return &Sessions{cfg: cfg, deps: deps, bus: b, rep: rep, log: deps.Log, metrics: newMetrics(),
		remote: newRemote(b, deps.Log), touched: map[uuid.UUID]time.Time{}, seen: map[uuid.UUID]time.Time{}}
}

// Metrics are the engine's collectors (fed while this replica leads).
func (s *Sessions) Metrics() *Metrics { return s.metrics }

// Leading registers work that runs while this replica leads (the workshop
// ticker), with a context that ends when it stops leading.
func (s *Sessions) Leading(fn func(ctx context.Context)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leading = append(s.leading, fn)
}

// OnStarted registers fn for every session start, on the leader's engine
// (see Engine.OnStarted): it runs in the start's transaction.
func (s *Sessions) OnStarted(fn StartedFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = append(s.started, fn)
}

// OnAttempted registers fn for every attempt recorded, on the leader's
// engine (see Engine.OnAttempted): it runs in the attempt's transaction.
func (s *Sessions) OnAttempted(fn AttemptedFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tried = append(s.tried, fn)
}

// OnEnd registers fn to run on this replica when any session ends,
// wherever it was ended (the server closes its terminals).
func (s *Sessions) OnEnd(fn func(uuid.UUID)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onEnd = append(s.onEnd, fn)
}

// engine is the local engine while this replica leads, else nil.
func (s *Sessions) engine() *Engine {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.local
}

// leaderError is why this replica, leading, cannot run a request yet (its
// engine is finding its clusters; Docker does not answer); nil when it
// does not lead or can.
func (s *Sessions) leaderError() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.openErr
}

// Leader reports whether this replica runs the engine now.
func (s *Sessions) Leader() bool { return s.engine() != nil }

// Run takes part until ctx ends: it hears ended sessions, answers as the
// leader while it holds the engine lease, and tells the leader of keys
// typed here. On ctx's end a leading replica closes its engine (waiting for
// creates in flight) before it gives the lease up.
func (s *Sessions) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(3)
	go func() { defer wg.Done(); s.remote.run(ctx) }()
	go func() { defer wg.Done(); s.hearEnds(ctx) }()
	go func() { defer wg.Done(); s.sendTouches(ctx) }()
	s.rep.Lead(ctx, LeaseEngine, s.lead)
}

// lead is one term as the leader.
func (s *Sessions) lead(ctx context.Context, epoch int64) {
	e := New(s.cfg, Deps{Store: s.deps.Store, Sandboxes: s.deps.Sandboxes, Labs: s.deps.Labs, Log: s.log, Events: s.deps.Events, metrics: s.metrics})
	defer e.Close()
	s.mu.RLock()
	for _, fn := range s.started {
		e.OnStarted(fn)
	}
	for _, fn := range s.tried {
		e.OnAttempted(fn)
	}
	s.mu.RUnlock()
	var wg sync.WaitGroup
	defer wg.Wait()
	s.setOpen(nil, errFinding())
	defer s.setOpen(nil, nil)
	// Requests are answered from the start of the term: with why the
	// engine cannot run them yet, until it can.
	wg.Add(1)
	go func() {
		defer wg.Done()
		serveRPC(ctx, s.bus, s.log, func(ctx context.Context, op string, args json.RawMessage) (any, error) {
			if err := s.leaderError(); err != nil {
				return nil, err
			}
			return s.handle(ctx, e, op, args)
		})
	}()
	// Requests in flight to an earlier leader fail now: ask again.
	if err := s.bus.Publish(ctx, topicTerm, "term", map[string]int64{"epoch": epoch}); err != nil {
		s.log.Warn("announce the new term", "err", err)
	}
	for {
		err := e.Open(ctx)
		if err == nil {
			break
		}
		if !errors.Is(err, errs.Unavailable) {
			s.log.Error("find the clusters of active sessions", "err", err)
		} else {
			s.log.Error("not ready", "why", err.Error())
		}
		s.setOpen(nil, err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(e.cfg.ReapInterval):
		}
	}
	s.setOpen(e, nil)
	s.mu.RLock()
	work := append([]func(context.Context){}, s.leading...)
	s.mu.RUnlock()
	wg.Add(1 + len(work))
	go func() { defer wg.Done(); e.Run(ctx) }()
	for _, fn := range work {
		go func() { defer wg.Done(); fn(ctx) }()
	}
	<-ctx.Done()
}

func (s *Sessions) setOpen(e *Engine, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.local, s.openErr = e, err
}

// hearEnds runs the OnEnd functions for every session that ends, on any
// replica.
func (s *Sessions) hearEnds(ctx context.Context) {
	msgs, stop := s.bus.Subscribe()
	defer stop()
	bus.Each(ctx, msgs, func(m bus.Message) {
		if m.Type != EventEnded || !strings.HasPrefix(m.Topic, "session/") {
			return
		}
		id, err := uuid.Parse(strings.TrimPrefix(m.Topic, "session/"))
		if err != nil {
			return
		}
		s.mu.RLock()
		fns := append([]func(uuid.UUID){}, s.onEnd...)
		s.mu.RUnlock()
		for _, fn := range fns {
			fn(id)
		}
		s.touchMu.Lock()
		delete(s.touched, id)
		delete(s.seen, id)
		s.touchMu.Unlock()
	})
}

// sendTouches tells the leader of the keys typed on this replica, every
// two seconds.
func (s *Sessions) sendTouches(ctx context.Context) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.touchMu.Lock()
		ids := make([]uuid.UUID, 0, len(s.touched))
		for id := range s.touched {
			ids = append(ids, id)
		}
		s.touched = map[uuid.UUID]time.Time{}
		s.touchMu.Unlock()
		if len(ids) == 0 {
			continue
		}
		if e := s.engine(); e != nil {
			for _, id := range ids {
				e.Touch(id)
			}
			continue
		}
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := s.remote.call(c, "touch", touchArgs{IDs: ids}, nil); err != nil && ctx.Err() == nil {
			s.log.Debug("tell the leader of activity", "err", err)
		}
		cancel()
	}
}

// ---- the requests ----------------------------------------------------------

type startArgs struct {
	UserID     int64         `json:"userId"`
	LabID      string        `json:"labId"`
	Mode       string        `json:"mode,omitempty"`
	WorkshopID int64         `json:"workshopId,omitempty"`
	Lifetime   time.Duration `json:"lifetime,omitempty"`
	Replace    uuid.UUID     `json:"replace,omitempty"`
	Reason     string        `json:"reason,omitempty"`
	CopyFrom   uuid.UUID     `json:"copyFrom,omitempty"`
	Keep       []string      `json:"keep,omitempty"`
}

type sessionArgs struct {
	ID     uuid.UUID `json:"id"`
	Step   string    `json:"step,omitempty"`
	Answer string    `json:"answer,omitempty"`
	Skip   bool      `json:"skip,omitempty"`
	Reason string    `json:"reason,omitempty"`
}

type touchArgs struct {
	IDs []uuid.UUID `json:"ids"`
}

type idResult struct {
	ID       uuid.UUID `json:"id,omitempty"`
	Attempt  int64     `json:"attempt,omitempty"`
	State    string    `json:"state,omitempty"`
	OK       bool      `json:"ok,omitempty"`
	Position int       `json:"position,omitempty"`
	At       time.Time `json:"at,omitempty"`
}

type preparedResult struct {
	Prepared
	MeanCreate time.Duration `json:"meanCreate"`
	ETA        time.Duration `json:"eta"`
}

// handle runs a replica's request on the leader's engine.
func (s *Sessions) handle(ctx context.Context, e *Engine, op string, raw json.RawMessage) (any, error) {
	var a sessionArgs
	load := func() (*store.LabSession, error) {
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, err
		}
		return s.deps.Store.LabSession(ctx, a.ID)
	}
	switch op {
	case "start":
		var sa startArgs
		if err := json.Unmarshal(raw, &sa); err != nil {
			return nil, err
		}
		lab := labs.Find(s.deps.Labs, sa.LabID)
		if lab == nil {
			return nil, errLabGone(sa.LabID)
		}
		opts := []StartOption{WithMode(sa.Mode)}
		if sa.WorkshopID != 0 {
			opts = append(opts, WithWorkshop(sa.WorkshopID))
		}
		if sa.Lifetime != 0 {
			opts = append(opts, WithLifetime(sa.Lifetime))
		}
		if sa.CopyFrom != uuid.Nil {
			opts = append(opts, WithProgressFrom(sa.CopyFrom, sa.Keep))
		}
		if sa.Replace != uuid.Nil {
			old, err := s.deps.Store.LabSession(ctx, sa.Replace)
			if err != nil {
				return nil, err
			}
			opts = append(opts, Replacing(old, sa.Reason))
		}
		sess, err := e.Start(ctx, sa.UserID, lab, opts...)
		if err != nil {
			return nil, err
		}
		return idResult{ID: sess.ID}, nil
	case "attempt":
		sess, err := load()
		if err != nil {
			return nil, err
		}
		at, err := e.Attempt(ctx, sess, a.Step, a.Answer, a.Skip)
		if err != nil {
			return nil, err
		}
		return idResult{Attempt: at.ID}, nil
	case "end":
		sess, err := load()
		if err != nil {
			return nil, err
		}
		return nil, e.End(ctx, sess, a.Reason)
	case "retry":
		sess, err := load()
		if err != nil {
			return nil, err
		}
		return nil, e.Retry(ctx, sess)
	case "wake":
		sess, err := load()
		if err != nil {
			return nil, err
		}
		return nil, e.Wake(ctx, sess)
	case "touch":
		var ta touchArgs
		if err := json.Unmarshal(raw, &ta); err != nil {
			return nil, err
		}
		for _, id := range ta.IDs {
			e.Touch(id)
		}
		return nil, nil
	case "state":
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, err
		}
		st, ok := e.State(a.ID)
		return idResult{State: st, OK: ok}, nil
	case "activity":
		sess, err := load()
		if err != nil {
			return nil, err
		}
		return idResult{At: e.LastActivity(sess)}, nil
	case "queue":
		var q struct{ Sandbox string }
		if err := json.Unmarshal(raw, &q); err != nil {
			return nil, err
		}
		return idResult{Position: e.QueuePosition(q.Sandbox)}, nil
	case "usage":
		return e.Usage(), nil
	case "pool":
		return e.Pool(), nil
	case "prepared":
		var w struct{ Workshop int64 }
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, err
		}
		p := e.Prepared(w.Workshop)
		return preparedResult{Prepared: p, MeanCreate: p.MeanCreate, ETA: p.ETA}, nil
	case "prepare":
		var p struct {
			Workshop int64
			Shape    Shape
			N        int
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		e.Prepare(p.Workshop, p.Shape, p.N, nil)
		return nil, nil
	}
	return nil, fmt.Errorf("unknown request %q: this replica runs another version of podpath", op)
}

// ---- the engine's verbs, wherever it runs -----------------------------------

// Start starts a lab session (see Engine.Start).
func (s *Sessions) Start(ctx context.Context, userID int64, lab *labs.Lab, opts ...StartOption) (*store.LabSession, error) {
	if e := s.engine(); e != nil {
		return e.Start(ctx, userID, lab, opts...)
	}
	if err := s.leaderError(); err != nil {
		return nil, err
	}
	var c startConfig
	for _, o := range opts {
		o(&c)
	}
	if len(c.within) > 0 {
		return nil, errors.New("a start with Within cannot be sent to the leading replica: use WithProgressFrom")
	}
	args := startArgs{UserID: userID, LabID: lab.ID, Mode: c.n.Mode, WorkshopID: c.n.WorkshopID, Lifetime: c.n.Lifetime,
		CopyFrom: c.copyFrom, Keep: c.keep, Reason: c.reason}
	if c.replace != nil {
		args.Replace = c.replace.ID
	}
	var r idResult
	if err := s.remote.call(ctx, "start", args, &r); err != nil {
		return nil, err
	}
	return s.deps.Store.LabSession(ctx, r.ID)
}

// Attempt checks (or, with skip, solves) a step (see Engine.Attempt).
func (s *Sessions) Attempt(ctx context.Context, sess *store.LabSession, stepID, answer string, skip bool) (*store.Attempt, error) {
	if e := s.engine(); e != nil {
		return e.Attempt(ctx, sess, stepID, answer, skip)
	}
	if err := s.leaderError(); err != nil {
		return nil, err
	}
	var r idResult
	if err := s.remote.call(ctx, "attempt", sessionArgs{ID: sess.ID, Step: stepID, Answer: answer, Skip: skip}, &r); err != nil {
		return nil, err
	}
	return s.deps.Store.AttemptByID(ctx, r.Attempt)
}

// End ends a session and deletes its cluster (see Engine.End).
func (s *Sessions) End(ctx context.Context, sess *store.LabSession, reason string) error {
	if e := s.engine(); e != nil {
		return e.End(ctx, sess, reason)
	}
	if err := s.leaderError(); err != nil {
		return err
	}
	return s.remote.call(ctx, "end", sessionArgs{ID: sess.ID, Reason: reason}, nil)
}

// Retry provisions a failed cluster again (see Engine.Retry).
func (s *Sessions) Retry(ctx context.Context, sess *store.LabSession) error {
	if e := s.engine(); e != nil {
		return e.Retry(ctx, sess)
	}
	if err := s.leaderError(); err != nil {
		return err
	}
	return s.remote.call(ctx, "retry", sessionArgs{ID: sess.ID}, nil)
}

// Wake resumes a hibernated cluster; it counts as activity.
func (s *Sessions) Wake(ctx context.Context, sess *store.LabSession) error {
	s.noteActivity(sess.ID, false)
	if e := s.engine(); e != nil {
		return e.Wake(ctx, sess)
	}
	if err := s.leaderError(); err != nil {
		return err
	}
	return s.remote.call(ctx, "wake", sessionArgs{ID: sess.ID}, nil)
}

// Touch records activity (keys in a terminal): at once on the leader,
// within two seconds from another replica.
func (s *Sessions) Touch(id uuid.UUID) {
	if e := s.engine(); e != nil {
		s.noteActivity(id, false)
		e.Touch(id)
		return
	}
	s.noteActivity(id, true)
}

func (s *Sessions) noteActivity(id uuid.UUID, tell bool) {
	now := time.Now()
	s.touchMu.Lock()
	defer s.touchMu.Unlock()
	s.seen[id] = now
	if tell {
		s.touched[id] = now
	}
}

// State is the sandbox state the engine holds in memory, fresher than
// Postgres; ok is false when it holds none (the caller reads Postgres).
func (s *Sessions) State(id uuid.UUID) (string, bool) {
	if e := s.engine(); e != nil {
		return e.State(id)
	}
	return "", false
}

// LastActivity is the latest activity known of a session.
func (s *Sessions) LastActivity(sess *store.LabSession) time.Time {
	at := sess.LastActivityAt
	if e := s.engine(); e != nil {
		at = e.LastActivity(sess)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var r idResult
		if err := s.remote.call(ctx, "activity", sessionArgs{ID: sess.ID}, &r); err == nil && r.At.After(at) {
			at = r.At
		}
		cancel()
	}
	s.touchMu.Lock()
	if t, ok := s.seen[sess.ID]; ok && t.After(at) {
		at = t
	}
	s.touchMu.Unlock()
	return at
}

// QueuePosition is the 1-based position of a sandbox waiting for room, or 0.
func (s *Sessions) QueuePosition(sandboxName string) int {
	if e := s.engine(); e != nil {
		return e.QueuePosition(sandboxName)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var r idResult
	_ = s.remote.call(ctx, "queue", struct{ Sandbox string }{sandboxName}, &r)
	return r.Position
}

// ClusterCost is what a cluster of this shape costs on this server's
// sandbox backend (see CostOf).
func (s *Sessions) ClusterCost(shape Shape) Cost { return CostOf(s.deps.Sandboxes, shape) }

// Usage is the capacity model's view of the host.
func (s *Sessions) Usage() Usage {
	if e := s.engine(); e != nil {
		return e.Usage()
	}
	var u Usage
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.remote.call(ctx, "usage", nil, &u)
	return u
}

// Pool is the warm pool's state.
func (s *Sessions) Pool() PoolStatus {
	if e := s.engine(); e != nil {
		return e.Pool()
	}
	var p PoolStatus
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.remote.call(ctx, "pool", nil, &p)
	return p
}

// Prepared is how far a workshop's prepared clusters are.
func (s *Sessions) Prepared(workshop int64) Prepared {
	if e := s.engine(); e != nil {
		return e.Prepared(workshop)
	}
	var p preparedResult
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.remote.call(ctx, "prepared", struct{ Workshop int64 }{workshop}, &p)
	p.Prepared.MeanCreate, p.Prepared.ETA = p.MeanCreate, p.ETA
	return p.Prepared
}

// PrepareMark is Engine.PrepareMark on the leader (the workshop ticker
// runs there); nil elsewhere.
func (s *Sessions) PrepareMark() map[int64]uint64 {
	if e := s.engine(); e != nil {
		return e.PrepareMark()
	}
	return nil
}

// Prepare sets a workshop's prepared clusters (see Engine.Prepare).
func (s *Sessions) Prepare(workshop int64, shape Shape, n int, mark map[int64]uint64) {
	if e := s.engine(); e != nil {
		e.Prepare(workshop, shape, n, mark)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.remote.call(ctx, "prepare", struct {
		Workshop int64
		Shape    Shape
		N        int
	}{workshop, shape, n}, nil); err != nil {
		s.log.Warn("prepare a workshop's clusters", "workshop", workshop, "err", err)
	}
}

// SessionLab returns the lab as the session sees it (its values filled).
func (s *Sessions) SessionLab(sess *store.LabSession) *labs.Lab {
	return SessionLab(s.deps.Labs, sess, s.log)
}

// Target is a session's sandbox, for terminals: reached from any replica.
func (s *Sessions) Target(sandboxName string) Target { return s.deps.Sandboxes.Target(sandboxName) }

// Subscribe returns a session's events, from whichever replica sends them.
func (s *Sessions) Subscribe(id uuid.UUID) (<-chan Event, func()) {
	return s.deps.Events.Subscribe(id)
}

// Publish sends an event to a session's lab pages on every replica.
func (s *Sessions) Publish(id uuid.UUID, typ string, data any) {
	s.deps.Events.Publish(id, typ, data)
}

// Ready says whether this replica can serve: it leads with its engine
// open, or another replica leads.
func (s *Sessions) Ready(ctx context.Context) bool {
	if s.engine() != nil {
		return true
	}
	if s.leaderError() != nil {
		return false
	}
	// Another replica leads, and beat within the last two beats. Not this
	// one: between taking the lease and opening its engine, this replica
	// leads but cannot answer yet (CI once saw /readyz say 200 in that
	// moment and the next request wait 3 s for a leader that was itself).
	ok, err := s.deps.Store.LeaderAlive(ctx, LeaseEngine, 2*s.rep.TTL()/5+time.Second, s.rep.ID)
	return err == nil && ok
}
