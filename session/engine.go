// Package session is podpath's lab-session engine: it provisions each
// session's cluster within the host's capacity, runs the lab's setup, grades
// steps, hibernates idle clusters and wakes them, ends sessions past their
// deadline, notices clusters whose nodes died, keeps a warm pool of clusters
// created ahead, and finds everything again after a restart. It knows
// nothing of HTTP: its refusals are errs of a kind (errs.NotFound,
// errs.Conflict, errs.Gone, ...) that the server maps to status codes.
//
// Each session's life is one value (life) with its own lock; the engine's
// map of lives is read without a lock, so nothing on the keystroke path
// waits for another session or for Postgres.
package session

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/podpath/podpath/grader"
	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/sandbox/kube"
	"github.com/podpath/podpath/store"
)

// Sandboxes is what the engine needs of the sandbox manager. The real one is
// sandbox.Manager (through Docker); tests put a sandbox that fails on cue
// behind it.
type Sandboxes interface {
	Create(ctx context.Context, spec sandbox.Spec, progress func(sandbox.Event)) (*sandbox.Info, error)
	Delete(ctx context.Context, name string) error
	Get(ctx context.Context, name string) (*sandbox.Info, error)
	Hibernate(ctx context.Context, name string) error
	Resume(ctx context.Context, name string) error
	// WaitReady waits until every node of the sandbox reports Ready (with
	// a fresh lease); WaitAPI until its API server answers.
	WaitReady(ctx context.Context, name string, timeout time.Duration) error
	WaitAPI(ctx context.Context, name string, timeout time.Duration) error
	Reconcile(ctx context.Context, known []string) ([]string, error)
	Target(name string) Target
}

// Target is one sandbox as the grader and the terminals use it.
type Target interface {
	grader.Target
	// Attach starts the learner's shell on a node, on a terminal of the
	// given size.
	Attach(ctx context.Context, node string, cols, rows uint16) (TTY, error)
	// Foreground names the program in the foreground of the learner's
	// shell on a node ("bash" at its prompt); an error where it cannot tell.
	Foreground(ctx context.Context, node string) (string, error)
	// Watch attaches one more client to the learner's shell on a node (an
	// instructor's, on any replica: read-only unless control) that never
	// resizes it; an error where the shell cannot be shared.
	Watch(ctx context.Context, node string, control bool, cols, rows uint16) (TTY, error)
	// WindowSize is the size of the learner's shell on a node.
	WindowSize(ctx context.Context, node string) (cols, rows uint16, err error)
	// Dial opens a TCP connection to a port on a node (traffic ports:
	// a learner's web app, opened in the browser through the server).
	Dial(ctx context.Context, node string, port int) (net.Conn, error)
	// Close ends what the target keeps open (probe channels).
	Close()
}

// TTY is a process on a terminal: its bytes both ways, its size, its end.
type TTY interface {
	io.ReadWriter
	Resize(cols, rows uint16) error
	Wait() (int, error)
	Close() error
}

// Manager adapts a sandbox.Manager to Sandboxes.
func Manager(m *sandbox.Manager) Sandboxes { return managerSandboxes{m} }

type managerSandboxes struct{ *sandbox.Manager }

func (m managerSandboxes) Target(name string) Target { return managerTarget{m.Manager.Target(name)} }

type managerTarget struct{ *sandbox.Target }

func (t managerTarget) Attach(ctx context.Context, node string, cols, rows uint16) (TTY, error) {
	tty, err := t.Target.Attach(ctx, node, cols, rows)
	if err != nil {
		return nil, err
	}
	return tty, nil
}

func (t managerTarget) Watch(ctx context.Context, node string, control bool, cols, rows uint16) (TTY, error) {
	tty, err := t.Target.Watch(ctx, node, control, cols, rows)
	if err != nil {
		return nil, err
	}
	return tty, nil
}

// Kube wraps the Kubernetes backend (learner nodes as Pods of a host
// cluster) as the engine's Sandboxes.
func Kube(b *kube.Backend) Sandboxes { return kubeSandboxes{b} }

type kubeSandboxes struct{ *kube.Backend }

func (k kubeSandboxes) ClusterCost(shape Shape) Cost {
	cpu, mem := k.Backend.ClusterCost(shape.Workers, shape.Worker)
	return Cost{CPU: cpu, Memory: mem}
}

func (k kubeSandboxes) PoolRoom(ctx context.Context) ([]NodeRoom, map[string]string, error) {
	nodes, placed, err := k.Backend.Room(ctx)
	if err != nil {
		return nil, nil, err
	}
	rooms := make([]NodeRoom, len(nodes))
	for i, n := range nodes {
		rooms[i] = NodeRoom{Name: n.Name, CPU: n.CPU, Memory: n.Memory}
	}
	return rooms, placed, nil
}

func (k kubeSandboxes) Target(name string) Target { return kubeTarget{k.Backend.Target(name)} }

type kubeTarget struct{ *kube.Target }

func (t kubeTarget) Attach(ctx context.Context, node string, cols, rows uint16) (TTY, error) {
	tty, err := t.Target.Attach(ctx, node, cols, rows)
	if err != nil {
		return nil, err
	}
	return tty, nil
}

func (t kubeTarget) Watch(ctx context.Context, node string, control bool, cols, rows uint16) (TTY, error) {
	tty, err := t.Target.Watch(ctx, node, control, cols, rows)
	if err != nil {
		return nil, err
	}
	return tty, nil
}

// StageLabSetup is the provisioning stage that runs the lab's setup actions;
// StageClaim the one that wakes a warm-pool cluster.
const (
	StageLabSetup = "lab-setup"
	StageClaim    = "claim"
)

// Config is the engine's part of podpath serve's configuration.
type Config struct {
	NodeImage            string
	CapacityCPU          float64
	CapacityMemory       int
	ProvisionConcurrency int
	IdleTimeout          time.Duration
	MaxLifetime          time.Duration
	HibernateAfter       time.Duration
	WarnBefore           time.Duration
	// WarmPool is how many pool clusters to keep per cluster shape.
	WarmPool []PoolTarget
	// ReapInterval is how often deadlines, idleness, pending writes and the
	// pool are looked at; HealthInterval how often Docker is asked whether
	// each cluster's nodes still run.
	ReapInterval   time.Duration
	HealthInterval time.Duration
	// PoolInterval is how often a pooled backend's nodes are read (Pooled:
	// nodes added or drained, the room other Pods take).
	PoolInterval time.Duration
	// TrafficPattern is the URL of a session's traffic port with PORT in
	// place of the port number (server/traffic.go); a Killercoda
	// scenario's cluster gets it in /etc/killercoda/host. Nil: no file.
	TrafficPattern func(session uuid.UUID) string
}

// Deps are what the engine is built from.
type Deps struct {
	Store     *store.Store
	Sandboxes Sandboxes
	Labs      []*labs.Lab
	Log       *slog.Logger
	// Events carry sessions' events to lab pages; nil: in this process
	// only, ended by Close. Given ones outlive the engine.
	Events Events
	// metrics outlive the engine when set (one per replica, fed by each
	// engine it runs).
	metrics *Metrics
}

// Engine runs lab sessions.
type Engine struct {
	cfg       Config
	store     *store.Store
	sandboxes Sandboxes
	labs      []*labs.Lab
	log       *slog.Logger
	events    Events
	ownEvents bool // made here: Close ends them
	capacity  *capacity
	metrics   *Metrics
	pool      *pool
	writes    *writes

	instance string
	ctx      context.Context // the engine's lifetime, set by Open
	cancel   context.CancelFunc
	opened   atomic.Bool
	wg       sync.WaitGroup

	lives sync.Map // uuid.UUID -> *life

	onEndMu     sync.Mutex
	onEnd       []func(uuid.UUID)
	onStarted   []StartedFunc
	onAttempted []AttemptedFunc
}

// New builds an engine; Open starts it.
func New(cfg Config, d Deps) *Engine {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if cfg.ReapInterval <= 0 {
		cfg.ReapInterval = 5 * time.Second
	}
	if cfg.HealthInterval <= 0 {
		cfg.HealthInterval = 15 * time.Second
	}
	if cfg.PoolInterval <= 0 {
		cfg.PoolInterval = 30 * time.Second
	}
	e := &Engine{
		cfg: cfg, store: d.Store, sandboxes: d.Sandboxes, labs: d.Labs, log: d.Log,
		events:   d.Events,
		capacity: newCapacity(cfg.CapacityCPU, cfg.CapacityMemory, cfg.ProvisionConcurrency),
		metrics:  d.metrics,
	}
	if c, ok := d.Sandboxes.(Coster); ok {
		e.capacity.frozenCPU = c.HibernatedHoldsCPU()
	}
	if e.metrics == nil {
		e.metrics = newMetrics()
	}
	if e.events == nil {
		e.events, e.ownEvents = newHub(), true
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	e.writes = &writes{e: e, latest: map[string]uint64{}, pending: map[string]stateWrite{}, deletes: map[string]*ticket{}}
	e.pool = newPool(e, cfg.WarmPool)
	return e
}

// OnEnd registers fn to run when a session ends (the server closes its
// terminals).
func (e *Engine) OnEnd(fn func(uuid.UUID)) {
	e.onEndMu.Lock()
	defer e.onEndMu.Unlock()
	e.onEnd = append(e.onEnd, fn)
}

// StartedFunc hears of a new session inside the transaction that stores
// it: what it writes with ctx is part of the start, and its error undoes
// the start (the server writes the lab.started webhook event this way, a
// workshop carries the learner's progress over).
type StartedFunc func(ctx context.Context, sess *store.LabSession, st Start) error

// A Start is what a StartedFunc hears of a start besides its session.
type Start struct {
	// ProgressFrom is the session whose progress the start copies, in its
	// transaction after the hooks (WithProgressFrom: an instructor's
	// reset), or uuid.Nil.
	ProgressFrom uuid.UUID
}

// AttemptedFunc hears of an attempt inside the transaction that records
// it: what it writes with ctx is part of the attempt, and its error undoes
// it (the server writes step.passed and lab.completed this way).
type AttemptedFunc func(ctx context.Context, sess *store.LabSession, a *store.Attempt) error

// OnStarted registers fn for every session start.
func (e *Engine) OnStarted(fn StartedFunc) {
	e.onEndMu.Lock()
	defer e.onEndMu.Unlock()
	e.onStarted = append(e.onStarted, fn)
}

// OnAttempted registers fn for every attempt recorded (checks and skips).
func (e *Engine) OnAttempted(fn AttemptedFunc) {
	e.onEndMu.Lock()
	defer e.onEndMu.Unlock()
	e.onAttempted = append(e.onAttempted, fn)
}

func (e *Engine) hooks() ([]StartedFunc, []AttemptedFunc) {
	e.onEndMu.Lock()
	defer e.onEndMu.Unlock()
	return append([]StartedFunc(nil), e.onStarted...), append([]AttemptedFunc(nil), e.onAttempted...)
}

// SessionLab returns the lab as the session sees it, filled with the values
// drawn at its Start; nil when the lab is no longer installed.
func (e *Engine) SessionLab(sess *store.LabSession) *labs.Lab {
	return SessionLab(e.labs, sess, e.log)
}

// SessionLab finds sess's lab in list and fills it with the session's
// values. A value the lab gained after the session started is drawn from
// the session's id, so it stays the same on every call.
func SessionLab(list []*labs.Lab, sess *store.LabSession, log *slog.Logger) *labs.Lab {
	lab := labs.Find(list, sess.LabID)
	if lab == nil || len(lab.Values) == 0 {
		return lab
	}
	seed := binary.BigEndian.Uint64(sess.ID[:8])
	vals := lab.Complete(sess.Values, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
	filled, err := lab.For(vals)
	if err != nil {
		// The validator fills every template with sample values, so only
		// a value outside its declared kind gets here (a stored value for
		// an int that is now a word).
		log.Error("a session's values do not fill its lab; using the lab's sample values", "session", sess.ID, "lab", lab.ID, "err", err)
		filled, _ = lab.For(lab.SampleValues())
	}
	return filled
}

// Metrics are the engine's Prometheus collectors.
func (e *Engine) Metrics() *Metrics { return e.metrics }

// sandboxName names a session's cluster: ls-<instance>-<session>. The
// instance part keeps servers sharing a Docker engine apart.
func (e *Engine) sandboxName(id uuid.UUID) string {
	return e.namePrefix() + strings.ReplaceAll(id.String(), "-", "")[:12]
}

func (e *Engine) namePrefix() string { return "ls-" + e.instance + "-" }

// Open reads this installation's id and finds the clusters of active
// sessions. When Docker does not answer it changes nothing and returns an
// error of kind errs.Unavailable that says so; call it again later.
func (e *Engine) Open(ctx context.Context) error {
	if e.opened.Load() {
		return nil
	}
	inst, err := e.store.InstanceID(ctx)
	if err != nil {
		return fmt.Errorf("read this installation's id (run podpath migrate): %w", err)
	}
	e.instance = inst
	if err := e.recover(ctx); err != nil {
		return err
	}
	e.readPool(ctx)
	e.opened.Store(true)
	e.metrics.observe(e)
	return nil
}

func (e *Engine) ready() error {
	if !e.opened.Load() {
		return errFinding()
	}
	return nil
}

// Run reaps until ctx ends: deadlines, idle clusters, dead nodes, pending
// state writes and the warm pool.
func (e *Engine) Run(ctx context.Context) {
	t := time.NewTicker(e.cfg.ReapInterval)
	defer t.Stop()
	lastHealth, lastPool := time.Now(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.ctx.Done():
			return
		case <-t.C:
		}
		if !e.opened.Load() {
			continue
		}
		e.writes.flush(ctx)
		e.flushTouches(ctx)
		e.reap(ctx)
		if time.Since(lastHealth) >= e.cfg.HealthInterval {
			lastHealth = time.Now()
			e.checkHealth(ctx)
		}
		if time.Since(lastPool) >= e.cfg.PoolInterval {
			lastPool = time.Now()
			e.readPool(ctx)
		}
		e.pool.refill(ctx)
		e.metrics.observe(e)
	}
}

// readPool gives the capacity model a pooled backend's nodes and where its
// clusters are (Pooled). A failed read keeps the last one.
func (e *Engine) readPool(ctx context.Context) {
	p, ok := e.sandboxes.(Pooled)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	nodes, placed, err := p.PoolRoom(ctx)
	if err != nil {
		e.log.Warn("read the lab pool's room; keeping the last reading", "err", err)
		return
	}
	e.capacity.setPool(nodes, placed, e.cfg.CapacityCPU, float64(e.cfg.CapacityMemory))
}

// Close ends every event stream, cancels provisioning in flight and waits
// for the engine's goroutines. Interrupted provisioning starts over at the
// next Open.
func (e *Engine) Close() {
	if e.ownEvents {
		e.events.Close()
	}
	e.cancel()
	e.wg.Wait()
}

// Subscribe returns the session's events; the channel closes at shutdown.
func (e *Engine) Subscribe(id uuid.UUID) (<-chan Event, func()) { return e.events.Subscribe(id) }

// QueuePosition is the 1-based position of a sandbox waiting for room, or 0.
func (e *Engine) QueuePosition(sandboxName string) int { return e.capacity.position(sandboxName) }

// Usage is the capacity model's view of the host.
func (e *Engine) Usage() Usage { return e.capacity.usage() }

// Target is the sandbox of a session, for its terminals.
func (e *Engine) Target(sandboxName string) Target { return e.sandboxes.Target(sandboxName) }

func (e *Engine) publish(id uuid.UUID, typ string, data any) {
	e.events.Publish(id, typ, data)
}

func (e *Engine) goBackground(fn func()) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		fn()
	}()
}

// StartOption sets how a session starts.
type StartOption func(*startConfig)

// startConfig is a start: the row to store, and what else its transaction
// holds.
type startConfig struct {
	n       store.NewLabSession
	within  []func(ctx context.Context, sess *store.LabSession) error
	replace *store.LabSession
	reason  string
	// copyFrom's progress on the steps keep is copied to the new session.
	copyFrom uuid.UUID
	keep     []string
}

// WithMode starts the session in a mode (store.ModeGuided, the default, or
// store.ModeChallenge); the caller has checked it.
func WithMode(mode string) StartOption {
	return func(c *startConfig) { c.n.Mode = mode }
}

// WithWorkshop starts the session as part of a workshop: it takes a cluster
// prepared for the workshop when there is one.
func WithWorkshop(id int64) StartOption {
	return func(c *startConfig) { c.n.WorkshopID = id }
}

// WithLifetime sets the session's hard lifetime instead of the server's
// (a workshop's sessions last until the workshop ends).
func WithLifetime(d time.Duration) StartOption {
	return func(c *startConfig) {
		if d > 0 {
			c.n.Lifetime = d
		}
	}
}

// Within runs fn in the transaction that stores the new session, after
// it: what fn writes with ctx is part of the start, and its error undoes
// the start (a reset copies the progress it keeps this way).
func Within(fn func(ctx context.Context, sess *store.LabSession) error) StartOption {
	return func(c *startConfig) { c.within = append(c.within, fn) }
}

// WithProgressFrom copies the progress of session from on the steps keep
// to the new session, in the transaction that stores it (an instructor's
// reset keeps the learner's progress this way).
func WithProgressFrom(from uuid.UUID, keep []string) StartOption {
	return func(c *startConfig) { c.copyFrom, c.keep = from, keep }
}

// Replacing ends old, the learner's active session, in the same
// transaction that stores the new one (an instructor's reset): if the
// start fails, old goes on as it was; once it is stored, old's cluster is
// deleted before the new one is provisioned.
func Replacing(old *store.LabSession, reason string) StartOption {
	return func(c *startConfig) { c.replace, c.reason = old, reason }
}

// Start creates a lab session for the user and provisions its cluster, from
// the warm pool when it holds one of the lab's shape. A learner with an
// active session gets store.ErrActiveSession. The session's row, its
// sandbox's, what the OnStarted hooks and Within write, and the end of the
// session it replaces are one transaction; clusters are touched only after
// it commits. When it does not, nothing was stored and the error is of
// kind ErrUnavailable and ErrNotSaved (or store.ErrActiveSession).
func (e *Engine) Start(ctx context.Context, userID int64, lab *labs.Lab, opts ...StartOption) (*store.LabSession, error) {
	if err := e.ready(); err != nil {
		return nil, err
	}
	id := uuid.New()
	shape := ShapeOf(lab)
	vals := lab.Draw(rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())))
	filled, err := lab.For(vals)
	if err != nil {
		return nil, fmt.Errorf("lab %s: %w", lab.ID, err)
	}
	sc := startConfig{n: store.NewLabSession{
		ID: id, UserID: userID, LabID: lab.ID, Lifetime: e.cfg.MaxLifetime, IdleTimeout: e.cfg.IdleTimeout,
		SandboxName: e.sandboxName(id), Image: e.cfg.NodeImage, Workers: lab.Cluster.Workers, Values: vals,
		WorkerMilliCPU: shape.Worker.MilliCPU, WorkerMemoryMiB: shape.Worker.MemoryMiB,
	}}
	for _, o := range opts {
		o(&sc)
	}
	if lab.Challenge { // a challenge has no guided mode
		sc.n.Mode = store.ModeChallenge
	}
	n := &sc.n
	// The session it replaces stops in memory first (provisioning in
	// flight is cancelled) and goes on if the start fails.
	var old *ending
	if sc.replace != nil {
		if old, err = e.beginEnd(ctx, sc.replace); err != nil {
			return nil, err
		}
	}
	if n.WorkshopID != 0 {
		e.pool.mu.Lock()
		e.pool.starts[n.WorkshopID]++
		e.pool.mu.Unlock()
	}
	pc := e.pool.claim(shape, e.cfg.NodeImage, n.WorkshopID)
	if pc != nil {
		n.Claim = pc.name
	}
	sess, err := e.storeStart(ctx, &sc)
	if pc != nil && errors.Is(err, store.ErrNotFound) {
		// The pool's row is gone (deleted by hand): forget it, create afresh.
		e.log.Warn("pool cluster's row is gone; creating a fresh cluster", "sandbox", pc.name)
		e.pool.claimed(pc)
		pc.ticket.release()
		pc, n.Claim = nil, ""
		sess, err = e.storeStart(ctx, &sc)
	}
	if err != nil {
		e.pool.unclaim(pc) // the pool cluster stays the pool's
		old.undo()
		if errors.Is(err, store.ErrActiveSession) {
			return nil, err
		}
		e.log.Error("start a lab session: nothing was stored", "user", userID, "lab", lab.ID, "err", err)
		return nil, notSaved("errstartnotsaved", "the lab session could not be saved, so nothing was started; start the lab again in a moment")
	}
	if old != nil {
		e.finishEnd(ctx, old, sc.reason)
	}
	l := &life{id: id, userID: userID, labID: lab.ID, lab: filled, sandbox: n.SandboxName, shape: shape}
	l.touched.Store(time.Now().UnixNano())
	if pc != nil {
		e.pool.claimed(pc)
		l.sandbox = pc.name
		l.ticket = pc.ticket
		e.metrics.claim(true)
	} else if len(e.cfg.WarmPool) > 0 {
		e.metrics.claim(false)
	}
	e.lives.Store(id, l)
	e.log.Info("lab session started", "session", id, "user", userID, "lab", lab.ID, "mode", sess.Mode, "sandbox", l.sandbox, "fromPool", pc != nil)
	l.mu.Lock()
	e.provisionLocked(l, pc != nil)
	l.mu.Unlock()
	return sess, nil
}

// storeStart writes a start in one transaction: the replaced session's
// end, the new session and its sandbox, and what the hooks write.
func (e *Engine) storeStart(ctx context.Context, sc *startConfig) (*store.LabSession, error) {
	started, _ := e.hooks()
	var sess *store.LabSession
	err := e.store.InTx(ctx, func(ctx context.Context) error {
		if sc.replace != nil {
			if err := e.store.EndLabSession(ctx, sc.replace.ID, sc.reason); err != nil {
				return err
			}
		}
		var err error
		if sess, err = e.store.CreateLabSession(ctx, sc.n); err != nil {
			return err
		}
		for _, fn := range started {
			if err := fn(ctx, sess, Start{ProgressFrom: sc.copyFrom}); err != nil {
				return err
			}
		}
		if sc.copyFrom != uuid.Nil {
			if err := e.store.CopyProgress(ctx, sc.copyFrom, sess.ID, sc.keep); err != nil {
				return err
			}
		}
		for _, fn := range sc.within {
			if err := fn(ctx, sess); err != nil {
				return err
			}
		}
		return nil
	})
	return sess, err
}

// lifeOf finds the life of an active session, making one for a session this
// process has not met (it was failed at start-up, or the lab went missing).
func (e *Engine) lifeOf(ctx context.Context, sess *store.LabSession) (*life, error) {
	if v, ok := e.lives.Load(sess.ID); ok {
		return v.(*life), nil
	}
	if sess.State != store.SessionActive {
		return nil, errEnded()
	}
	sb, err := e.store.SandboxOf(ctx, sess.ID)
	if err != nil {
		return nil, err
	}
	l := &life{id: sess.ID, userID: sess.UserID, labID: sess.LabID, lab: e.SessionLab(sess), sandbox: sb.Name, shape: shapeOf(sb), phase: phaseFailed}
	l.touched.Store(sess.LastActivityAt.UnixNano())
	l.flushed.Store(sess.LastActivityAt.UnixNano())
	v, _ := e.lives.LoadOrStore(sess.ID, l)
	return v.(*life), nil
}

// Touch records learner activity. It takes no lock that another session
// shares and writes nothing to Postgres (the reaper does, every few
// seconds); a hibernated cluster is woken in the background.
func (e *Engine) Touch(id uuid.UUID) {
	v, ok := e.lives.Load(id)
	if !ok {
		return
	}
	l := v.(*life)
	l.touched.Store(time.Now().UnixNano())
	if l.hibernated.Load() && l.waking.CompareAndSwap(false, true) {
		e.goBackground(func() {
			defer l.waking.Store(false)
			if err := e.wake(e.ctx, l); err != nil {
				e.log.Warn("wake on activity", "session", id, "err", err)
			}
		})
	}
}

// LastActivity is the latest learner activity the engine knows of the
// session: in memory (keys, checks) or in Postgres, whichever is later.
func (e *Engine) LastActivity(sess *store.LabSession) time.Time {
	if v, ok := e.lives.Load(sess.ID); ok {
		return v.(*life).lastActivity(sess.LastActivityAt)
	}
	return sess.LastActivityAt
}

// Wake resumes the session's cluster if it is hibernated, and counts as
// activity.
func (e *Engine) Wake(ctx context.Context, sess *store.LabSession) error {
	if err := e.ready(); err != nil {
		return err
	}
	l, err := e.lifeOf(ctx, sess)
	if err != nil {
		return err
	}
	l.touched.Store(time.Now().UnixNano())
	return e.wake(ctx, l)
}

func (e *Engine) wake(ctx context.Context, l *life) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.phase != phaseHibernated {
		return nil
	}
	if err := e.sandboxes.Resume(ctx, l.sandbox); err != nil {
		if errors.Is(err, sandbox.ErrNotFound) {
			e.failGoneLocked(l, msgVanished)
		}
		return fmt.Errorf("wake the cluster: %w", err)
	}
	l.setPhase(phaseReady)
	l.ticket.setHibernated(false)
	e.writes.state(ctx, l.sandbox, store.SandboxReady, nil)
	e.publish(l.id, EventState, map[string]any{"state": store.SandboxReady})
	e.log.Info("sandbox resumed", "session", l.id, "sandbox", l.sandbox)
	return nil
}

// State is a session's cluster state as this engine knows it, which is
// fresher than Postgres while a write is pending.
func (e *Engine) State(id uuid.UUID) (string, bool) {
	v, ok := e.lives.Load(id)
	if !ok {
		return "", false
	}
	l := v.(*life)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.phase.sandboxState(), true
}

// End ends a session and deletes its cluster. Provisioning in flight is
// cancelled first and its cluster deleted once the create returns, so no
// cluster outlives its session and its room is given back exactly once.
func (e *Engine) End(ctx context.Context, sess *store.LabSession, reason string) error {
	if err := e.ready(); err != nil {
		return err
	}
	en, err := e.beginEnd(ctx, sess)
	if err != nil || en == nil {
		return err
	}
	if err := e.store.EndLabSession(ctx, en.l.id, reason); err != nil {
		// Postgres did not take it: the session goes on as it was.
		en.undo()
		return err
	}
	e.finishEnd(ctx, en, reason)
	return nil
}

// ending is a session's end under way in memory, not yet in Postgres.
type ending struct {
	l            *life
	prev         phase
	provisioning bool
	done         chan struct{}
}

// beginEnd stops a session in memory: it is ending, and provisioning in
// flight is cancelled. It returns nil when the session has ended or is
// ending already.
func (e *Engine) beginEnd(ctx context.Context, sess *store.LabSession) (*ending, error) {
	l, err := e.lifeOf(ctx, sess)
	if errors.Is(err, errs.Gone) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.phase == phaseEnding {
		return nil, nil
	}
	en := &ending{l: l, prev: l.phase, provisioning: l.provDone != nil, done: l.provDone}
	l.setPhase(phaseEnding)
	if l.cancel != nil {
		l.cancel()
	}
	return en, nil
}

// undo lets a session whose end Postgres did not take go on as it was,
// except that provisioning, cancelled by beginEnd, must be retried.
func (en *ending) undo() {
	if en == nil {
		return
	}
	en.l.mu.Lock()
	defer en.l.mu.Unlock()
	prev := en.prev
	if en.provisioning {
		prev = phaseFailed
	}
	en.l.setPhase(prev)
}

// finishEnd follows an end Postgres took: the session's streams and
// terminals hear of it, and its cluster is deleted.
func (e *Engine) finishEnd(ctx context.Context, en *ending, reason string) {
	l := en.l
	e.publish(l.id, EventEnded, map[string]string{"reason": reason})
	e.onEndMu.Lock()
	fns := append([]func(uuid.UUID){}, e.onEnd...)
	e.onEndMu.Unlock()
	for _, fn := range fns {
		fn(l.id)
	}
	e.writes.state(ctx, l.sandbox, store.SandboxExpiring, nil)
	teardown := func() {
		if en.done != nil {
			<-en.done
		}
		e.deleteCluster(context.WithoutCancel(ctx), l)
		e.lives.Delete(l.id)
		e.log.Info("lab session ended", "session", l.id, "reason", reason)
	}
	if en.provisioning {
		// The create may take a minute to notice; the learner need not wait.
		e.goBackground(teardown)
		return
	}
	teardown()
}

// deleteCluster deletes a session's cluster and gives its room back. A
// failed delete is retried by the reaper (the sandbox stays expiring).
func (e *Engine) deleteCluster(ctx context.Context, l *life) {
	if err := e.sandboxes.Delete(ctx, l.sandbox); err != nil {
		e.log.Error("delete cluster; the reaper tries again", "sandbox", l.sandbox, "err", err)
		l.mu.Lock()
		t := l.ticket
		l.ticket = nil
		l.mu.Unlock()
		e.writes.retryDelete(l.sandbox, t)
		return
	}
	l.mu.Lock()
	l.releaseRoomLocked()
	l.closeTargetLocked()
	l.mu.Unlock()
	e.writes.state(ctx, l.sandbox, store.SandboxDeleted, nil)
}

// Retry provisions a failed session's cluster again. A second Retry while
// the first runs is a conflict.
func (e *Engine) Retry(ctx context.Context, sess *store.LabSession) error {
	if err := e.ready(); err != nil {
		return err
	}
	if sess.State != store.SessionActive {
		return errEnded()
	}
	lab := e.SessionLab(sess)
	if lab == nil {
		return errLabGone(sess.LabID)
	}
	l, err := e.lifeOf(ctx, sess)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.phase != phaseFailed {
		return errRetry(l.phase.sandboxState())
	}
	l.lab = lab
	// The old cluster's room goes back now; provisioning asks for it anew.
	l.releaseRoomLocked()
	e.writes.state(ctx, l.sandbox, store.SandboxRequested, nil)
	l.retry = true
	e.provisionLocked(l, false)
	return nil
}

// failLocked marks a session's cluster failed with a message for the
// learner; Retry starts over. The room stays held while the cluster may
// still run (callers release it where the cluster is gone). Callers hold l.mu.
func (e *Engine) failLocked(l *life, msg string) {
	if l.phase == phaseEnding {
		return
	}
	l.setPhase(phaseFailed)
	e.writes.state(context.Background(), l.sandbox, store.SandboxFailed, &msg)
	e.publish(l.id, EventState, map[string]any{"state": store.SandboxFailed, "error": msg})
}

// failGoneLocked fails a cluster that no longer runs (vanished, or its
// nodes exited) and gives its room back. Callers hold l.mu.
func (e *Engine) failGoneLocked(l *life, msg string) {
	e.failLocked(l, msg)
	l.releaseRoomLocked()
}

// Publish sends an event to the session's event streams (the server's
// workshop messages: broadcasts, take-overs, raised hands).
func (e *Engine) Publish(id uuid.UUID, typ string, data any) { e.publish(id, typ, data) }
