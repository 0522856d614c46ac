// Package replica lets several podpath serve processes share one database:
// each registers and beats a heartbeat, and work that must run once (the
// session engine: clusters, reaper, warm pool, recovery; the workshop
// ticker) runs on the one replica that holds a lease, moving to another
// within seconds when that one dies.
package replica

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/podpath/podpath/store"
)

// Defaults: a lease lives TTL and is renewed every TTL/5; a replica is
// live while its heartbeat is younger than TTL.
const DefaultTTL = 10 * time.Second

// Replica is this process among the others.
type Replica struct {
	ID      uuid.UUID
	Host    string
	Version string
	st      *store.Store
	log     *slog.Logger
	ttl     time.Duration
}

// New names this process; Beat registers it.
func New(st *store.Store, version string, ttl time.Duration, log *slog.Logger) *Replica {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if log == nil {
		log = slog.Default()
	}
	host, _ := os.Hostname()
	return &Replica{ID: uuid.New(), Host: host, Version: version, st: st, log: log, ttl: ttl}
}

// TTL is how long a lease and a heartbeat last.
func (r *Replica) TTL() time.Duration { return r.ttl }

// Beat registers the replica and beats its heartbeat until ctx ends, then
// removes it.
func (r *Replica) Beat(ctx context.Context) {
	tick := time.NewTicker(r.ttl / 5)
	defer tick.Stop()
	for {
		if err := r.st.BeatReplica(ctx, r.ID, r.Host, r.Version); err != nil && ctx.Err() == nil {
			r.log.Warn("replica heartbeat", "err", err)
		}
		select {
		case <-ctx.Done():
			c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = r.st.RemoveReplica(c, r.ID)
			cancel()
			return
		case <-tick.C:
		}
	}
}

// Live lists the replicas alive now (this one included once it beat).
func (r *Replica) Live(ctx context.Context) ([]*store.Replica, error) {
	return r.st.Replicas(ctx, r.ttl)
}

// Lead runs work while this replica holds the lease name, until ctx ends:
// it tries to take the lease every TTL/5, runs work with a context that is
// cancelled when the lease is lost (a renewal refused, or none acknowledged
// before the lease would have expired), waits for work to return, and
// tries again. On ctx's end it stops work and gives the lease up, so
// another replica takes over at once.
func (r *Replica) Lead(ctx context.Context, name string, work func(ctx context.Context, epoch int64)) {
	every := r.ttl / 5
	for ctx.Err() == nil {
		sent := time.Now()
		epoch, ok, err := r.st.TakeLease(ctx, name, r.ID, r.ttl)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("take lease", "lease", name, "err", err)
		}
		if !ok {
			select {
			case <-ctx.Done():
			case <-time.After(every):
			}
			continue
		}
		r.log.Info("leading", "lease", name, "epoch", epoch, "replica", r.ID)
		r.hold(ctx, name, epoch, sent, every, work)
		if ctx.Err() == nil {
			r.log.Warn("lost the lease; another replica leads", "lease", name, "epoch", epoch)
		}
	}
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = r.st.DropLease(c, name, r.ID)
}

// hold runs work under the lease taken at sent, renewing it, until the
// lease is lost or ctx ends.
func (r *Replica) hold(ctx context.Context, name string, epoch int64, sent time.Time, every time.Duration, work func(context.Context, int64)) {
	leadCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer stop()
		work(leadCtx, epoch)
	}()
	defer wg.Wait()
	defer stop()
	// The lease is ours until the database's expiry; acting on our own
	// clock, we give up a margin earlier than the last renewal allows.
	deadline := sent.Add(r.ttl - every)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-leadCtx.Done():
			return
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return
		}
		sent := time.Now()
		rctx, cancel := context.WithDeadline(leadCtx, deadline)
		got, ok, err := r.st.TakeLease(rctx, name, r.ID, r.ttl)
		cancel()
		switch {
		case err != nil:
			r.log.Warn("renew lease", "lease", name, "err", err)
		case !ok || got != epoch:
			return
		default:
			deadline = sent.Add(r.ttl - every)
		}
	}
}
