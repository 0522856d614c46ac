package session

import (
	"context"
	"sync"
	"time"
)

// writes records sandbox states in Postgres. A write that fails (Postgres
// restarting, a network blip) is tried again at once a few times and then by
// the reaper until it lands; a newer write of the same sandbox replaces an
// older one still pending, so the last state wins.
type writes struct {
	e       *Engine
	mu      sync.Mutex
	seq     uint64
	latest  map[string]uint64 // the newest write of each sandbox
	pending map[string]stateWrite
	deletes map[string]*ticket // clusters whose delete failed, with their room
}

type stateWrite struct {
	seq    uint64
	state  string
	errMsg *string
}

var writeBackoff = []time.Duration{0, 100 * time.Millisecond, 400 * time.Millisecond}

// state writes a sandbox's state, retrying as above.
func (w *writes) state(ctx context.Context, name, state string, errMsg *string) {
	w.mu.Lock()
	w.seq++
	sw := stateWrite{seq: w.seq, state: state, errMsg: errMsg}
	w.latest[name] = sw.seq
	w.mu.Unlock()
	var err error
	for _, d := range writeBackoff {
		time.Sleep(d)
		if err = w.try(ctx, name, sw); err == nil {
			return
		}
	}
	w.e.log.Error("record sandbox state; the reaper tries again", "sandbox", name, "state", state, "err", err)
	w.mu.Lock()
	if w.latest[name] == sw.seq {
		w.pending[name] = sw
	}
	w.mu.Unlock()
	w.e.metrics.writeRetries.Inc()
}

func (w *writes) try(ctx context.Context, name string, sw stateWrite) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := w.e.store.SetSandboxState(wctx, name, sw.state, sw.errMsg)
	if err == nil {
		w.mu.Lock()
		if p, ok := w.pending[name]; ok && p.seq <= sw.seq {
			delete(w.pending, name)
		}
		w.mu.Unlock()
	}
	return err
}

// retryDelete remembers a cluster whose delete failed; its room is given
// back once a delete succeeds.
func (w *writes) retryDelete(name string, t *ticket) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.deletes[name] = t
}

// flush tries the pending writes and deletes again.
func (w *writes) flush(ctx context.Context) {
	w.mu.Lock()
	todo := make(map[string]stateWrite, len(w.pending))
	for k, v := range w.pending {
		todo[k] = v
	}
	dels := make(map[string]*ticket, len(w.deletes))
	for k, t := range w.deletes {
		dels[k] = t
	}
	w.mu.Unlock()
	for name, sw := range todo {
		if err := w.try(ctx, name, sw); err != nil {
			w.e.log.Warn("record sandbox state, again", "sandbox", name, "state", sw.state, "err", err)
		}
	}
	for name, t := range dels {
		if err := w.e.sandboxes.Delete(ctx, name); err != nil {
			w.e.log.Warn("delete cluster, again", "sandbox", name, "err", err)
			continue
		}
		w.mu.Lock()
		delete(w.deletes, name)
		w.mu.Unlock()
		t.release()
		w.state(ctx, name, "deleted", nil)
	}
}

// pendingCount is how many writes wait for Postgres.
func (w *writes) pendingCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending)
}
