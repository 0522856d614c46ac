package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/podpath/podpath/bus"
	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/store"
)

// The replicas that do not lead ask the leader's engine over the bus: a
// request on topicLeader, acknowledged at once and answered when done on
// the asker's own topic. A new term (another replica leads) fails the
// requests in flight, which the learner may try again.
const (
	topicLeader = "rpc/leader"
	topicTerm   = "rpc/term"
	// ackWait is how long an asker waits for the leader to take a request
	// before saying that no replica leads right now.
	ackWait = 3 * time.Second
)

func replyTopic(origin string) string { return "rpc/" + origin }

type rpcRequest struct {
	ID    string          `json:"id"`
	Op    string          `json:"op"`
	Reply string          `json:"reply"`
	Args  json.RawMessage `json:"args,omitempty"`
}

type rpcReply struct {
	ID     string          `json:"id"`
	Ack    bool            `json:"ack,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *rpcError       `json:"error,omitempty"`
}

// rpcError carries an engine error across: its kind, its sentence and
// catalog key, or one of the store's errors the server tells apart.
type rpcError struct {
	Kind     errs.Kind         `json:"kind"`
	Message  string            `json:"message"`
	Key      string            `json:"key,omitempty"`
	Args     map[string]string `json:"args,omitempty"`
	Sentinel string            `json:"sentinel,omitempty"`
}

var rpcSentinels = map[string]error{
	"activeSession": store.ErrActiveSession, "notFound": store.ErrNotFound,
}

func encodeError(err error) *rpcError {
	if err == nil {
		return nil
	}
	for name, s := range rpcSentinels {
		if errors.Is(err, s) {
			return &rpcError{Sentinel: name, Kind: errs.KindOf(err), Message: err.Error()}
		}
	}
	e := &rpcError{Kind: errs.KindOf(err), Message: err.Error()}
	if ee, ok := errs.As(err); ok {
		e.Key, e.Args = ee.Key, ee.Args
	}
	return e
}

func (e *rpcError) err() error {
	if e == nil {
		return nil
	}
	if s, ok := rpcSentinels[e.Sentinel]; ok {
		if e.Message == s.Error() {
			return s
		}
		return fmt.Errorf("%s: %w", e.Message, s)
	}
	return &errs.Error{Kind: e.Kind, Message: e.Message, Key: e.Key, Args: e.Args}
}

// errNoLeader is what an asker hears when no replica takes its request.
var errNoLeader = errs.Keyed(errs.Unavailable, "errnoleader", "the server is changing hands between its replicas; try again in a few seconds")

// remote asks the leader.
type remote struct {
	bus Bus
	log *slog.Logger

	mu      sync.Mutex
	pending map[string]chan rpcReply
}

func newRemote(b Bus, log *slog.Logger) *remote {
	return &remote{bus: b, log: log, pending: map[string]chan rpcReply{}}
}

// run routes replies to their askers and fails them all at a new term,
// until ctx ends.
func (r *remote) run(ctx context.Context) {
	msgs, stop := r.bus.Subscribe(replyTopic(r.bus.Origin()), topicTerm)
	defer stop()
	for {
		select {
		case <-ctx.Done():
			r.failAll()
			return
		case m, ok := <-msgs:
			if !ok {
				r.failAll()
				return
			}
			switch m.Type {
			case "term", bus.TypeResync:
				r.failAll()
			case "reply":
				var rep rpcReply
				if m.Decode(&rep) != nil {
					continue
				}
				r.mu.Lock()
				ch := r.pending[rep.ID]
				r.mu.Unlock()
				if ch != nil {
					select {
					case ch <- rep:
					default:
					}
				}
			}
		}
	}
}

func (r *remote) failAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, ch := range r.pending {
		select {
		case ch <- rpcReply{ID: id, Error: encodeError(errNoLeader)}:
		default:
		}
	}
}

// call asks the leader to run op with args and decodes its result into
// result (which may be nil).
func (r *remote) call(ctx context.Context, op string, args, result any) error {
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	req := rpcRequest{ID: uuid.NewString(), Op: op, Reply: r.bus.Origin(), Args: raw}
	ch := make(chan rpcReply, 4)
	r.mu.Lock()
	r.pending[req.ID] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.pending, req.ID)
		r.mu.Unlock()
	}()
	if err := r.bus.Publish(ctx, topicLeader, "request", req); err != nil {
		return fmt.Errorf("ask the leading replica: %w", err)
	}
	ack := time.NewTimer(ackWait)
	defer ack.Stop()
	acked := false
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ack.C:
			if !acked {
				return errNoLeader
			}
		case rep := <-ch:
			if rep.Ack && rep.Error == nil && rep.Result == nil {
				acked = true
				continue
			}
			if rep.Error != nil {
				return rep.Error.err()
			}
			if result != nil && len(rep.Result) > 0 {
				return json.Unmarshal(rep.Result, result)
			}
			return nil
		}
	}
}

// serveRPC answers requests with the leader's engine until ctx ends.
func serveRPC(ctx context.Context, b Bus, log *slog.Logger, handle func(ctx context.Context, op string, args json.RawMessage) (any, error)) {
	msgs, stop := b.Subscribe(topicLeader)
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	reply := func(to string, rep rpcReply) {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := b.Publish(c, replyTopic(to), "reply", rep); err != nil {
			log.Warn("answer a replica", "err", err)
		}
	}
	bus.Each(ctx, msgs, func(m bus.Message) {
		var req rpcRequest
		if m.Type != "request" || m.Decode(&req) != nil {
			return
		}
		reply(req.Reply, rpcReply{ID: req.ID, Ack: true})
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := handle(ctx, req.Op, req.Args)
			rep := rpcReply{ID: req.ID, Error: encodeError(err)}
			if err == nil && res != nil {
				raw, merr := json.Marshal(res)
				if merr != nil {
					rep.Error = encodeError(merr)
				} else {
					rep.Result = raw
				}
			}
			reply(req.Reply, rep)
		}()
	})
}
