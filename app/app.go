// Package app composes podpath serve: the session engine (wherever it runs
// among the replicas), the event bus between replicas, the webhook
// dispatcher and the HTTP server, from its configuration. The CLI and the
// tests build a server through it.
package app

import (
	"context"
	"github.com/google/uuid"
	"github.com/podpath/podpath/accounts"
	"github.com/podpath/podpath/limits"
	"log/slog"
	"net"
	"sync"

	"github.com/podpath/podpath/bus"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/replica"
	"github.com/podpath/podpath/server"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
	"github.com/podpath/podpath/webhooks"
)

// Deps are what an App is made of besides its configuration.
type Deps struct {
	Store     *store.Store
	Sandboxes session.Sandboxes
	Labs      []*labs.Lab
	Tracks    []*labs.Track
	Log       *slog.Logger
	// Version is this build's, told to the other replicas.
	Version string
}

// App is one replica of podpath serve.
type App struct {
	Server   *server.Server
	Sessions *session.Sessions
	Bus      *bus.Bus
	Replica  *replica.Replica
	Hooks    *webhooks.Dispatcher
	log      *slog.Logger
}

// EngineConfig is the session engine's part of the server's configuration.
func EngineConfig(cfg server.Config) session.Config {
	return session.Config{
		NodeImage: cfg.NodeImage, CapacityCPU: cfg.CapacityCPU, CapacityMemory: cfg.CapacityMemory,
		ProvisionConcurrency: cfg.ProvisionConcurrency, IdleTimeout: cfg.IdleTimeout, MaxLifetime: cfg.MaxLifetime,
		HibernateAfter: cfg.HibernateAfter, WarnBefore: cfg.WarnBefore, WarmPool: cfg.WarmPool,
		ReapInterval: cfg.ReapInterval, HealthInterval: cfg.HealthInterval,
	}
}

// New builds a replica; Run runs it.
func New(cfg server.Config, d Deps) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Version == "" {
		d.Version = "dev"
	}
	rep := replica.New(d.Store, d.Version, cfg.LeaseTTL, d.Log)
	b := bus.New(d.Store, rep.ID.String(), d.Log)
	var srv *server.Server
	ecfg := EngineConfig(cfg)
	ecfg.TrafficPattern = func(id uuid.UUID) string { return srv.TrafficPattern(id) }
	sessions := session.NewSessions(ecfg, session.Deps{Store: d.Store, Sandboxes: d.Sandboxes, Labs: d.Labs, Log: d.Log}, b, rep)
	hooks := webhooks.New(d.Store, nil, d.Log, webhooks.Options{Backoff: cfg.WebhookBackoff, MaxAttempts: cfg.WebhookMaxAttempts})
	lim := limits.New(d.Store)
	acc, err := accounts.New(accounts.Accounts{Store: d.Store, Limits: lim, PasswordLogin: cfg.PasswordLogin, AllowSignup: cfg.AllowSignup, SSO: cfg.SSO(), SessionTTL: cfg.SessionTTL})
	if err != nil {
		return nil, err
	}
	srv, err = server.New(cfg, server.Deps{Store: d.Store, Sessions: sessions, Accounts: acc, Limits: lim, Hooks: hooks, Bus: b, Replica: rep, Labs: d.Labs, Tracks: d.Tracks, Log: d.Log})
	if err != nil {
		return nil, err
	}
	sessions.Leading(srv.RunWorkshops)
	return &App{Server: srv, Sessions: sessions, Bus: b, Replica: rep, Hooks: hooks, log: d.Log}, nil
}

// Run runs the replica until ctx ends: the bus, the heartbeat, the session
// engine (leading, or asking the leader), the webhook dispatcher and the
// HTTP server on ln. At the end the server finishes its requests first,
// then a leading engine closes (creates in flight finish) and gives its
// lease to another replica, then the rest stops.
func (a *App) Run(ctx context.Context, ln net.Listener) error {
	a.Server.SetListenAddr(ln.Addr().String())
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	var wg sync.WaitGroup
	run := func(fn func(context.Context), c context.Context) {
		wg.Add(1)
		go func() { defer wg.Done(); fn(c) }()
	}
	run(a.Bus.Run, bg)
	select {
	case <-a.Bus.Listening():
	case <-ctx.Done():
	}
	run(a.Replica.Beat, bg)
	// Webhook deliveries need only the database: they start at once
	// (sending what a stopped server left in the outbox) and stop after
	// the last request has written its events. Every replica may send:
	// deliveries are claimed under a lock, each sent once.
	hooksCtx, stopHooks := context.WithCancel(bg)
	run(a.Hooks.Run, hooksCtx)
	sessCtx, stopSessions := context.WithCancel(bg)
	sessDone := make(chan struct{})
	go func() { a.Sessions.Run(sessCtx); close(sessDone) }()

	err := a.Server.Serve(ctx, ln)

	stopSessions()
	<-sessDone
	stopHooks()
	stopBG()
	wg.Wait()
	return err
}
