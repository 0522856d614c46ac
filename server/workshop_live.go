package server

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/podpath/podpath/bus"
	"github.com/podpath/podpath/store"
)

// workshopHub is the live side of workshops across the replicas: a board
// on any replica hears of a learner's check on any other through the bus
// (topic workshop/<id>: which learner changed, the workshop changed, it
// ended); a take-over is typed through the replica that holds the
// instructor's websocket, recorded in Postgres, and ended from any replica
// (topic takeovers).
type workshopHub struct {
	bus     *bus.Bus
	store   *store.Store
	replica uuid.UUID
	log     *slog.Logger

	mu sync.Mutex
	// takeovers are the take-overs typed through this replica, by session.
	takeovers map[uuid.UUID][]*liveTakeover
}

type liveTakeover struct {
	rec  *store.Takeover
	stop chan struct{}
	once sync.Once
	by   string
}

func (t *liveTakeover) end(by string) {
	t.once.Do(func() {
		t.by = by
		close(t.stop)
	})
}

const topicTakeovers = "takeovers"

func workshopTopic(id int64) string { return "workshop/" + strconv.FormatInt(id, 10) }

func newWorkshopHub(b *bus.Bus, st *store.Store, replica uuid.UUID, log *slog.Logger) *workshopHub {
	return &workshopHub{bus: b, store: st, replica: replica, log: log, takeovers: map[uuid.UUID][]*liveTakeover{}}
}

// subscribe returns the workshop's events, from every replica.
func (h *workshopHub) subscribe(id int64) (<-chan bus.Message, func()) {
	return h.bus.Subscribe(workshopTopic(id))
}

// publish tells every replica's boards of the workshop: "learner" (the
// user whose row changed), "workshop" (read it again), "ended".
func (h *workshopHub) publish(id int64, typ string, data any) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.bus.Publish(ctx, workshopTopic(id), typ, data); err != nil {
		h.log.Warn("publish a workshop event", "workshop", id, "type", typ, "err", err)
	}
}

// run ends this replica's take-overs that another replica ends (the
// learner's page on it, the session's end), until ctx ends.
func (h *workshopHub) run(ctx context.Context) {
	msgs, stop := h.bus.Subscribe(topicTakeovers)
	defer stop()
	bus.Each(ctx, msgs, func(m bus.Message) {
		var end takeoverEnd
		if m.Type == "end" && m.Decode(&end) == nil {
			h.endLocal(end.Session, end.By)
		}
	})
}

type takeoverEnd struct {
	Session uuid.UUID `json:"session"`
	By      string    `json:"by"`
}

func (h *workshopHub) addTakeover(sess uuid.UUID, t *liveTakeover) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.takeovers[sess] = append(h.takeovers[sess], t)
}

func (h *workshopHub) removeTakeover(sess uuid.UUID, t *liveTakeover) {
	h.mu.Lock()
	defer h.mu.Unlock()
	list := h.takeovers[sess]
	for i, x := range list {
		if x == t {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(h.takeovers, sess)
	} else {
		h.takeovers[sess] = list
	}
}

// takeover is the open take-over of a session (the oldest), on any
// replica, or nil.
func (h *workshopHub) takeover(ctx context.Context, sess uuid.UUID) *store.Takeover {
	t, err := h.store.OpenTakeover(ctx, sess)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			h.log.Warn("read a session's take-over", "session", sess, "err", err)
		}
		return nil
	}
	return t
}

// endAllTakeovers ends every take-over typed through this replica (at
// shutdown).
func (h *workshopHub) endAllTakeovers(by string) {
	h.mu.Lock()
	var all []*liveTakeover
	for _, list := range h.takeovers {
		all = append(all, list...)
	}
	h.mu.Unlock()
	for _, t := range all {
		t.end(by)
	}
}

// endTakeovers ends every open take-over of a session, on whichever
// replica it is typed through, and says whether there was one.
func (h *workshopHub) endTakeovers(sess uuid.UUID, by string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	open := h.takeover(ctx, sess) != nil
	local := h.endLocal(sess, by) > 0
	if open {
		if err := h.bus.Publish(ctx, topicTakeovers, "end", takeoverEnd{Session: sess, By: by}); err != nil {
			h.log.Warn("end a take-over on the other replicas", "session", sess, "err", err)
		}
	}
	return open || local
}

func (h *workshopHub) endLocal(sess uuid.UUID, by string) int {
	h.mu.Lock()
	list := append([]*liveTakeover(nil), h.takeovers[sess]...)
	h.mu.Unlock()
	for _, t := range list {
		t.end(by)
	}
	return len(list)
}

// Publish and EndTakeovers make the hub the workshops.Live of the class.
func (h *workshopHub) Publish(id int64, typ string, data any) { h.publish(id, typ, data) }

func (h *workshopHub) EndTakeovers(sess uuid.UUID, by string) { h.endTakeovers(sess, by) }
