package session

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/podpath/podpath/bus"
	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/store"
)

// Events carry a session's events to its lab pages: in one process (hub),
// or through the replicas' bus to every replica (busEvents).
type Events interface {
	Publish(id uuid.UUID, typ string, data any)
	Subscribe(id uuid.UUID) (<-chan Event, func())
	Close()
}

// Bus is what the engine needs of the replicas' event bus (package bus).
type Bus interface {
	Publish(ctx context.Context, topic, typ string, data any) error
	Subscribe(topics ...string) (<-chan bus.Message, func())
	Origin() string
}

// SessionTopic is the bus topic of a lab session's events.
func SessionTopic(id uuid.UUID) string { return "session/" + id.String() }

// EventResync tells a lab page that events may have been lost (the bus
// listened again): read the session afresh.
const EventResync = "resync"

// busEvents sends a session's events through the bus, so a lab page on any
// replica hears a change made on any other. An attempt goes by its id (the
// receiver loads it), as its results may not fit in a notification.
type busEvents struct {
	bus   Bus
	store *store.Store
	log   *slog.Logger
	ctx   context.Context
	stop  context.CancelFunc
}

// NewBusEvents makes Events on b; attempts are loaded from st.
func NewBusEvents(b Bus, st *store.Store, log *slog.Logger) Events {
	if log == nil {
		log = slog.Default()
	}
	ctx, stop := context.WithCancel(context.Background())
	return &busEvents{bus: b, store: st, log: log, ctx: ctx, stop: stop}
}

type attemptRef struct {
	ID int64 `json:"id"`
}

func (b *busEvents) Publish(id uuid.UUID, typ string, data any) {
	if a, ok := data.(*store.Attempt); ok {
		data = attemptRef{ID: a.ID}
	}
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	if err := b.bus.Publish(ctx, SessionTopic(id), typ, data); err != nil && b.ctx.Err() == nil {
		b.log.Warn("publish a session event", "session", id, "type", typ, "err", err)
	}
}

func (b *busEvents) Subscribe(id uuid.UUID) (<-chan Event, func()) {
	msgs, cancel := b.bus.Subscribe(SessionTopic(id))
	out := make(chan Event, 64)
	done := make(chan struct{})
	go func() {
		defer close(out)
		for {
			select {
			case <-done:
				return
			case <-b.ctx.Done():
				return
			case m, ok := <-msgs:
				if !ok {
					return
				}
				ev, ok := b.event(m)
				if !ok {
					continue
				}
				select {
				case out <- ev:
				default: // a stream too slow to keep up loses events
				}
			}
		}
	}()
	var once sync.Once
	return out, func() {
		once.Do(func() {
			cancel()
			close(done)
		})
	}
}

// event turns a bus message into the event the engine published.
func (b *busEvents) event(m bus.Message) (Event, bool) {
	switch m.Type {
	case bus.TypeResync:
		return Event{Type: EventResync}, true
	case EventAttempt:
		var ref attemptRef
		if err := m.Decode(&ref); err != nil {
			return Event{}, false
		}
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer cancel()
		a, err := b.store.AttemptByID(ctx, ref.ID)
		if err != nil {
			b.log.Warn("load a published attempt", "attempt", ref.ID, "err", err)
			return Event{}, false
		}
		return Event{Type: m.Type, Data: a}, true
	case EventProgress:
		var ev sandbox.Event
		if err := m.Decode(&ev); err != nil {
			return Event{}, false
		}
		return Event{Type: m.Type, Data: ev}, true
	}
	return Event{Type: m.Type, Data: json.RawMessage(m.Data)}, true
}

func (b *busEvents) Close() { b.stop() }

// the in-process hub is Events too.
func (h *hub) Publish(id uuid.UUID, typ string, data any) {
	h.publish(id, Event{Type: typ, Data: data})
}
func (h *hub) Subscribe(id uuid.UUID) (<-chan Event, func()) { return h.subscribe(id) }
func (h *hub) Close()                                        { h.close() }
