package session

import (
	"sync"

	"github.com/google/uuid"
)

// Event is something a lab page should hear about at once: provisioning
// progress, a state change, a check result, an expiry warning.
type Event struct {
	Type string `json:"type"`
	Data any    `json:"data,omitempty"`
}

// Event types sent on GET /api/sessions/{id}/events.
const (
	EventProgress = "progress" // a provisioning stage started or ended
	EventQueue    = "queue"    // the position in the provisioning queue
	EventState    = "state"    // the sandbox's state changed
	EventAttempt  = "attempt"  // a check or skip finished
	EventExpiring = "expiring" // the session ends soon
	EventEnded    = "ended"    // the session ended
)

// hub fans events out to the open event streams of each lab session. At
// shutdown it closes every stream's channel, so streams end at once instead
// of holding the server's graceful shutdown until its deadline.
type hub struct {
	mu     sync.Mutex
	subs   map[uuid.UUID]map[chan Event]struct{}
	closed bool
}

func newHub() *hub { return &hub{subs: map[uuid.UUID]map[chan Event]struct{}{}} }

// subscribe returns a channel of the session's events and a cancel func.
// The channel is closed when the engine shuts down.
func (h *hub) subscribe(id uuid.UUID) (<-chan Event, func()) {
	ch := make(chan Event, 64)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		close(ch)
		return ch, func() {}
	}
	if h.subs[id] == nil {
		h.subs[id] = map[chan Event]struct{}{}
	}
	h.subs[id][ch] = struct{}{}
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, ok := h.subs[id][ch]; !ok {
			return // closed at shutdown
		}
		delete(h.subs[id], ch)
		if len(h.subs[id]) == 0 {
			delete(h.subs, id)
		}
	}
}

// publish sends an event to every subscriber; a subscriber too slow to keep
// up loses events rather than stalling the sender.
func (h *hub) publish(id uuid.UUID, e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[id] {
		select {
		case ch <- e:
		default:
		}
	}
}

// close ends every stream.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for id, subs := range h.subs {
		for ch := range subs {
			close(ch)
		}
		delete(h.subs, id)
	}
}
