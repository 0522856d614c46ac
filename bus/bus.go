// Package bus carries live events between podpath's server processes
// through Postgres: LISTEN/NOTIFY on one channel. A lab page, a workshop
// board or a take-over banner subscribes to a topic on whichever replica
// serves it; whichever replica makes a change publishes it, and every
// replica (itself included) hears it from Postgres, in commit order.
//
// NOTIFY is not durable: a replica whose listening connection drops misses
// what was sent meanwhile. After it listens again the bus sends its local
// subscribers a resync message, and they read the state afresh.
package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Channel is the Postgres notification channel every replica listens on.
const Channel = "podpath_events"

// MaxPayload bounds a message as sent: Postgres refuses notifications of
// 8000 bytes or more. Larger data is sent by reference (an id to load).
const MaxPayload = 7900

// TypeResync is sent to every local subscriber after the bus listens
// again: messages may have been lost, read the state afresh.
const TypeResync = "resync"

// Message is one event on a topic ("session/<id>", "workshop/<id>", ...).
type Message struct {
	Topic string          `json:"topic"`
	Type  string          `json:"type"`
	Data  json.RawMessage `json:"data,omitempty"`
	// Origin is the replica that published it.
	Origin string `json:"origin,omitempty"`
}

// Decode reads the message's data into v.
func (m Message) Decode(v any) error { return json.Unmarshal(m.Data, v) }

// DB is what the bus needs of Postgres: a connection of its own to listen
// on, and a way to send a notification (alone or in a transaction).
type DB interface {
	ListenConn(ctx context.Context) (*pgx.Conn, error)
	Notify(ctx context.Context, channel, payload string) error
}

// Bus is one replica's end of the channel.
type Bus struct {
	db     DB
	origin string
	log    *slog.Logger

	mu        sync.Mutex
	subs      map[string]map[chan Message]struct{}
	all       map[chan Message]struct{} // subscribers of every topic
	closed    bool
	listening chan struct{} // closed once the first LISTEN is in place
	once      sync.Once
}

// New makes a bus; Run makes it listen. origin names this replica.
func New(db DB, origin string, log *slog.Logger) *Bus {
	if log == nil {
		log = slog.Default()
	}
	return &Bus{db: db, origin: origin, log: log, subs: map[string]map[chan Message]struct{}{},
		all: map[chan Message]struct{}{}, listening: make(chan struct{})}
}

// Origin is this replica's name on the bus.
func (b *Bus) Origin() string { return b.origin }

// Listening is closed once the bus listens (messages published after it
// reach this replica).
func (b *Bus) Listening() <-chan struct{} { return b.listening }

// Encode makes the notification payload of a message, refusing one that
// Postgres would not carry.
func Encode(m Message) (string, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	if len(b) > MaxPayload {
		return "", fmt.Errorf("bus message %s/%s is %d bytes, more than %d: send an id to load instead", m.Topic, m.Type, len(b), MaxPayload)
	}
	return string(b), nil
}

// Message makes a message from this replica.
func (b *Bus) Message(topic, typ string, data any) (Message, error) {
	m := Message{Topic: topic, Type: typ, Origin: b.origin}
	if data != nil {
		raw, err := json.Marshal(data)
		if err != nil {
			return m, err
		}
		m.Data = raw
	}
	return m, nil
}

// Publish sends a message to every replica's subscribers of topic.
func (b *Bus) Publish(ctx context.Context, topic, typ string, data any) error {
	m, err := b.Message(topic, typ, data)
	if err != nil {
		return err
	}
	payload, err := Encode(m)
	if err != nil {
		return err
	}
	return b.db.Notify(ctx, Channel, payload)
}

// PublishTx sends a message when tx commits, and never if it rolls back:
// the change and its announcement are one.
func (b *Bus) PublishTx(ctx context.Context, tx pgx.Tx, topic, typ string, data any) error {
	m, err := b.Message(topic, typ, data)
	if err != nil {
		return err
	}
	payload, err := Encode(m)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, Channel, payload)
	return err
}

// Subscribe returns a channel of the messages of topics (every topic when
// none is named) and a cancel func. A subscriber too slow to keep up loses
// messages rather than holding the others up; the channel is closed when
// the bus is closed.
func (b *Bus) Subscribe(topics ...string) (<-chan Message, func()) {
	ch := make(chan Message, 128)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		close(ch)
		return ch, func() {}
	}
	if len(topics) == 0 {
		b.all[ch] = struct{}{}
	}
	for _, t := range topics {
		if b.subs[t] == nil {
			b.subs[t] = map[chan Message]struct{}{}
		}
		b.subs[t][ch] = struct{}{}
	}
	return ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.all[ch]; ok {
			delete(b.all, ch)
		}
		for _, t := range topics {
			if _, ok := b.subs[t][ch]; ok {
				delete(b.subs[t], ch)
				if len(b.subs[t]) == 0 {
					delete(b.subs, t)
				}
			}
		}
	}
}

// Each runs fn for every message from msgs (a Subscribe channel), one at
// a time, until ctx ends or the bus closes the channel.
func Each(ctx context.Context, msgs <-chan Message, fn func(Message)) {
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-msgs:
			if !ok {
				return
			}
			fn(m)
		}
	}
}

// deliver hands a message to its topic's subscribers here.
func (b *Bus) deliver(m Message) {
	b.mu.Lock()
	defer b.mu.Unlock()
	send := func(ch chan Message) {
		select {
		case ch <- m:
		default:
		}
	}
	for ch := range b.subs[m.Topic] {
		send(ch)
	}
	for ch := range b.all {
		send(ch)
	}
}

// resync tells every subscriber here that messages may have been lost.
func (b *Bus) resync() {
	b.mu.Lock()
	defer b.mu.Unlock()
	seen := map[chan Message]bool{}
	for _, subs := range b.subs {
		for ch := range subs {
			if !seen[ch] {
				seen[ch] = true
				select {
				case ch <- Message{Type: TypeResync}:
				default:
				}
			}
		}
	}
	for ch := range b.all {
		select {
		case ch <- Message{Type: TypeResync}:
		default:
		}
	}
}

// Run listens until ctx ends, listening again (and resyncing subscribers)
// whenever the connection drops. It closes every subscription when it
// returns.
func (b *Bus) Run(ctx context.Context) {
	defer b.close()
	backoff := 100 * time.Millisecond
	first := true
	for ctx.Err() == nil {
		err := b.listen(ctx, func() {
			backoff = 100 * time.Millisecond
			if first {
				first = false
				b.once.Do(func() { close(b.listening) })
			} else {
				b.log.Info("bus: listening again; subscribers read the state afresh")
				b.resync()
			}
		})
		if ctx.Err() != nil {
			return
		}
		b.log.Warn("bus: the listening connection to Postgres failed; listening again", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (b *Bus) listen(ctx context.Context, listening func()) error {
	conn, err := b.db.ListenConn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{Channel}.Sanitize()); err != nil {
		return err
	}
	listening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		var m Message
		if err := json.Unmarshal([]byte(n.Payload), &m); err != nil {
			b.log.Warn("bus: a notification that is not a message", "err", err)
			continue
		}
		b.deliver(m)
	}
}

func (b *Bus) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	seen := map[chan Message]bool{}
	for _, subs := range b.subs {
		for ch := range subs {
			if !seen[ch] {
				seen[ch] = true
				close(ch)
			}
		}
	}
	for ch := range b.all {
		if !seen[ch] {
			close(ch)
		}
	}
	b.subs = map[string]map[chan Message]struct{}{}
	b.all = map[chan Message]struct{}{}
}
