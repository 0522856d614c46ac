package webhooks_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/store"
	"github.com/podpath/podpath/webhooks"
)

const secret = "whsec-test-0123456789abcdef"

func TestSignMatchesHandWrittenHMAC(t *testing.T) {
	body := []byte(`{"id":"x","type":"lab.started"}`)
	at := time.Unix(1767225600, 0)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("1767225600." + string(body)))
	want := "t=1767225600,v1=" + hex.EncodeToString(m.Sum(nil))
	if got := webhooks.Sign([]byte(secret), at, body); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	if err := webhooks.Verify([]byte(secret), want, body, 5*time.Minute, at.Add(time.Minute)); err != nil {
		t.Fatalf("Verify of a good signature: %v", err)
	}
	// Several v1 values: any may match (a receiver rotating secrets).
	if err := webhooks.Verify([]byte(secret), "t=1767225600,v1=00ff,"+strings.TrimPrefix(want, "t=1767225600,"), body, 0, at); err != nil {
		t.Fatalf("Verify with an extra v1: %v", err)
	}
	for _, tc := range []struct {
		name   string
		secret string
		header string
		body   string
		now    time.Time
		want   error
	}{
		{"body changed", secret, want, `{"id":"y","type":"lab.started"}`, at, webhooks.ErrBadSignature},
		{"wrong secret", "another secret", want, string(body), at, webhooks.ErrBadSignature},
		{"time changed", secret, strings.Replace(want, "t=1767225600", "t=1767225601", 1), string(body), at, webhooks.ErrBadSignature},
		{"too old", secret, want, string(body), at.Add(6 * time.Minute), webhooks.ErrStaleSignature},
		{"from the future", secret, want, string(body), at.Add(-6 * time.Minute), webhooks.ErrStaleSignature},
		{"no v1", secret, "t=1767225600", string(body), at, webhooks.ErrMalformedSignature},
		{"no t", secret, strings.TrimPrefix(want, "t=1767225600,"), string(body), at, webhooks.ErrMalformedSignature},
		{"not hex", secret, "t=1767225600,v1=zz", string(body), at, webhooks.ErrMalformedSignature},
		{"empty", secret, "", string(body), at, webhooks.ErrMalformedSignature},
	} {
		err := webhooks.Verify([]byte(tc.secret), tc.header, []byte(tc.body), 5*time.Minute, tc.now)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: Verify = %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestDelay(t *testing.T) {
	var o webhooks.Options
	for attempt, want := range map[int]time.Duration{1: 2 * time.Second, 2: 4 * time.Second, 3: 8 * time.Second, 11: 2048 * time.Second, 12: time.Hour, 40: time.Hour} {
		if got := o.Delay(attempt); got != want {
			t.Errorf("Delay(%d) = %s, want %s", attempt, got, want)
		}
	}
}

// delivery is one request a receiver got.
type delivery struct {
	event, id, sig string
	body           []byte
	verifyErr      error
	code           int // the receiver's answer
}

// receiver is a local webhook receiver; answer decides each reply (nil: 204).
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	n      int
	got    []delivery
	answer func(n int, d delivery) int
}

func newReceiver(t *testing.T, answer func(n int, d delivery) int) *receiver {
	r := &receiver{answer: answer}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		d := delivery{event: req.Header.Get("X-Podpath-Event"), id: req.Header.Get("X-Podpath-Delivery"), sig: req.Header.Get("X-Podpath-Signature"), body: body}
		d.verifyErr = webhooks.Verify([]byte(secret), d.sig, body, 5*time.Minute, time.Now())
		if req.Header.Get("Content-Type") != "application/json" {
			d.verifyErr = fmt.Errorf("content type %q", req.Header.Get("Content-Type"))
		}
		r.mu.Lock()
		n := r.n
		r.n++
		r.mu.Unlock()
		d.code = http.StatusNoContent
		if r.answer != nil {
			d.code = r.answer(n, d)
		}
		r.mu.Lock()
		r.got = append(r.got, d)
		r.mu.Unlock()
		w.WriteHeader(d.code)
	}))
	t.Cleanup(r.Close)
	return r
}

// arrived is how many requests came, answered or not.
func (r *receiver) arrived() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// count counts the successful deliveries (answered 2xx) of each event id.
func (r *receiver) count() map[string]int {
	out := map[string]int{}
	for _, d := range r.deliveries() {
		if d.code >= 200 && d.code < 300 {
			out[d.id]++
		}
	}
	return out
}

func openStore(t *testing.T, url string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, _, err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st
}

func register(t *testing.T, st *store.Store, url string, events ...string) *store.Webhook {
	t.Helper()
	ctx := context.Background()
	u, err := st.UserByEmail(ctx, "admin@example.com")
	if errors.Is(err, store.ErrNotFound) {
		u, err = st.CreateUser(ctx, "admin@example.com", "Admin", "x", store.RoleAdmin)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 {
		events = webhooks.Events
	}
	w, err := st.CreateWebhook(ctx, url, secret, events, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func testLog() *slog.Logger {
	level := slog.LevelError
	if os.Getenv("PODPATH_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// fast are options for tests: retries in tens of milliseconds.
var fast = webhooks.Options{Backoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Poll: 50 * time.Millisecond}

// run starts d until the returned stop is called (or the test ends);
// stop waits for Run to return.
func run(t *testing.T, d *webhooks.Dispatcher) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Error("Run did not return within 30 s of its context ending")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func waitFor(t *testing.T, what string, timeout time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func deliveriesOf(t *testing.T, st *store.Store, w *store.Webhook) []*store.Delivery {
	t.Helper()
	list, err := st.WebhookDeliveries(context.Background(), w.ID, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// A receiver that fails twice gets the event on the third try: the same
// body, signature verifying, the same delivery id each time; the outbox
// says delivered after 3 attempts.
func TestRetriedUntilDelivered(t *testing.T) {
	st := openStore(t, testenv.Postgres(t))
	rcv := newReceiver(t, func(n int, _ delivery) int {
		if n < 2 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	w := register(t, st, rcv.URL)
	d := webhooks.New(st, nil, testLog(), fast)
	run(t, d)
	if _, err := d.EnqueueOnce(context.Background(), "", webhooks.LabCompleted, map[string]string{"labId": "pods"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the third attempt to be recorded", 10*time.Second, func() bool {
		l := deliveriesOf(t, st, w)
		return len(l) == 1 && l[0].Status == store.DeliveryDelivered
	})
	got := rcv.deliveries()
	if len(got) != 3 {
		t.Fatalf("the receiver got %d requests, want 3", len(got))
	}
	for i, g := range got {
		if g.verifyErr != nil {
			t.Errorf("request %d: %v", i+1, g.verifyErr)
		}
		if string(g.body) != string(got[0].body) || g.id != got[0].id || g.event != webhooks.LabCompleted {
			t.Errorf("request %d differs from the first: %s %s %s / %s %s", i+1, g.event, g.id, g.body, got[0].id, got[0].body)
		}
	}
	var env struct {
		ID        string
		Type      string
		CreatedAt time.Time
		Data      map[string]string
	}
	if err := json.Unmarshal(got[0].body, &env); err != nil {
		t.Fatal(err)
	}
	if env.ID != got[0].id || env.Type != webhooks.LabCompleted || env.Data["labId"] != "pods" || time.Since(env.CreatedAt) > time.Minute {
		t.Errorf("body %s does not carry the event (delivery header %s)", got[0].body, got[0].id)
	}
	l := deliveriesOf(t, st, w)[0]
	if l.Attempts != 3 || l.LastStatusCode == nil || *l.LastStatusCode != 200 || l.DeliveredAt == nil || l.EventID.String() != got[0].id {
		t.Errorf("outbox row: attempts %d, code %v, delivered %v, event %s", l.Attempts, l.LastStatusCode, l.DeliveredAt, l.EventID)
	}
}

// After MaxAttempts failures a delivery is failed, with the receiver's
// answer as its error; a retry gives it one more attempt.
func TestGivesUpThenRetry(t *testing.T) {
	st := openStore(t, testenv.Postgres(t))
	var healthy atomic.Bool
	rcv := newReceiver(t, func(int, delivery) int {
		if healthy.Load() {
			return http.StatusAccepted
		}
		return http.StatusBadGateway
	})
	w := register(t, st, rcv.URL, webhooks.WorkshopEnded)
	opts := fast
	opts.MaxAttempts = 2
	d := webhooks.New(st, nil, testLog(), opts)
	run(t, d)
	if _, err := d.EnqueueOnce(context.Background(), "", webhooks.WorkshopEnded, webhooks.WorkshopEndedData{WorkshopID: 1, Title: "K8s 101", Learners: 3}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the delivery to fail", 10*time.Second, func() bool {
		l := deliveriesOf(t, st, w)
		return len(l) == 1 && l[0].Status == store.DeliveryFailed
	})
	l := deliveriesOf(t, st, w)[0]
	if l.Attempts != 2 || l.LastError == nil || !strings.Contains(*l.LastError, "502") || *l.LastStatusCode != 502 {
		t.Fatalf("failed row: attempts %d, error %v", l.Attempts, l.LastError)
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(rcv.deliveries()); n != 2 {
		t.Fatalf("a failed delivery was tried again on its own: %d requests", n)
	}
	healthy.Store(true)
	if _, err := st.RetryDelivery(context.Background(), w.ID, l.ID); err != nil {
		t.Fatal(err)
	}
	d.Poke()
	waitFor(t, "the retried delivery", 10*time.Second, func() bool { return deliveriesOf(t, st, w)[0].Status == store.DeliveryDelivered })
	if l := deliveriesOf(t, st, w)[0]; l.Attempts != 3 || l.LastError != nil {
		t.Errorf("after the retry: attempts %d, error %v", l.Attempts, l.LastError)
	}
	if _, err := st.RetryDelivery(context.Background(), w.ID, l.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("retry of a delivered delivery: %v, want ErrNotFound", err)
	}
}

// Deliveries survive a restart: events enqueued while the receiver is down
// (one of them in flight when the dispatcher stops, one enqueued while no
// dispatcher runs) all reach it through a new dispatcher on a new
// connection pool, each once.
func TestRestartLosesNothing(t *testing.T) {
	dbURL := testenv.Postgres(t)
	st1 := openStore(t, dbURL)
	var mode atomic.Int32 // 0 down (503), 1 hang on the first request, 2 up
	hung := make(chan struct{})
	var hangOnce sync.Once
	rcv := newReceiver(t, func(_ int, d delivery) int {
		switch mode.Load() {
		case 0:
			return http.StatusServiceUnavailable
		case 1:
			hangOnce.Do(func() { close(hung); time.Sleep(2 * time.Second) })
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	w := register(t, st1, rcv.URL, webhooks.StepPassed)
	d1 := webhooks.New(st1, nil, testLog(), webhooks.Options{Backoff: 30 * time.Millisecond, MaxBackoff: 30 * time.Millisecond, Poll: 30 * time.Millisecond, MaxAttempts: 1000})
	stop1 := run(t, d1)
	const n = 10
	for i := range n {
		if _, err := d1.EnqueueOnce(context.Background(), "", webhooks.StepPassed, map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "failed attempts while the receiver is down", 10*time.Second, func() bool { return len(rcv.deliveries()) >= 2*n })
	mode.Store(1)
	select {
	case <-hung:
	case <-time.After(10 * time.Second):
		t.Fatal("no request reached the hanging receiver")
	}
	stop1() // with a request in flight
	if _, err := d1.EnqueueOnce(context.Background(), "", webhooks.StepPassed, map[string]int{"i": n}); err != nil {
		t.Fatal(err)
	}
	before := deliveriesOf(t, st1, w)
	for _, l := range before {
		if l.Status != store.DeliveryPending {
			t.Fatalf("a delivery is %s before the receiver was ever up", l.Status)
		}
	}
	st1.Close()

	mode.Store(2)
	st2 := openStore(t, dbURL)
	d2 := webhooks.New(st2, nil, testLog(), fast)
	run(t, d2)
	waitFor(t, "every event after the restart", 10*time.Second, func() bool { return len(rcv.count()) == n+1 })
	time.Sleep(200 * time.Millisecond) // time for a duplicate to arrive
	for id, c := range rcv.count() {
		if c != 1 {
			t.Errorf("event %s arrived %d times", id, c)
		}
	}
	for _, g := range rcv.deliveries() {
		if g.verifyErr != nil {
			t.Errorf("delivery %s: %v", g.id, g.verifyErr)
		}
	}
	after := deliveriesOf(t, st2, w)
	if len(after) != n+1 {
		t.Errorf("%d deliveries in the outbox, want %d", len(after), n+1)
	}
	for _, l := range after {
		if l.Status != store.DeliveryDelivered {
			t.Errorf("delivery %d is %s after the restart", l.ID, l.Status)
		}
	}
}

// Two dispatchers on one database with many events: each event reaches the
// receiver exactly once.
func TestNoEventDeliveredTwice(t *testing.T) {
	dbURL := testenv.Postgres(t)
	st1 := openStore(t, dbURL)
	st2 := openStore(t, dbURL)
	rcv := newReceiver(t, func(int, delivery) int {
		time.Sleep(time.Millisecond)
		return http.StatusOK
	})
	w := register(t, st1, rcv.URL, webhooks.StepPassed)
	d1 := webhooks.New(st1, nil, testLog(), fast)
	d2 := webhooks.New(st2, nil, testLog(), fast)
	run(t, d1)
	run(t, d2)
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		d := d1
		if i%2 == 1 {
			d = d2
		}
		wg.Go(func() {
			if _, err := d.EnqueueOnce(context.Background(), "", webhooks.StepPassed, map[string]string{"i": strconv.Itoa(i)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	waitFor(t, "every event", 30*time.Second, func() bool { return len(rcv.count()) == n })
	time.Sleep(300 * time.Millisecond) // time for a duplicate to arrive
	for id, c := range rcv.count() {
		if c != 1 {
			t.Errorf("event %s arrived %d times", id, c)
		}
	}
	for _, l := range deliveriesOf(t, st1, w) {
		if l.Status != store.DeliveryDelivered || l.Attempts != 1 {
			t.Errorf("delivery %d: %s after %d attempts", l.ID, l.Status, l.Attempts)
		}
	}
}

// Enqueue only writes the outbox: a receiver that takes seconds to answer
// does not slow it, and a webhook not subscribed to a type gets nothing.
func TestSlowReceiverDoesNotBlockEnqueue(t *testing.T) {
	st := openStore(t, testenv.Postgres(t))
	release := make(chan struct{})
	rcv := newReceiver(t, func(int, delivery) int {
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
		return http.StatusOK
	})
	defer close(release)
	register(t, st, rcv.URL, webhooks.LabStarted)
	other := newReceiver(t, nil)
	register(t, st, other.URL, webhooks.WorkshopEnded)
	d := webhooks.New(st, nil, testLog(), fast)
	run(t, d)
	if _, err := d.EnqueueOnce(context.Background(), "", webhooks.LabStarted, map[string]int{"i": -1}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a request in flight at the slow receiver", 5*time.Second, func() bool { return rcv.arrived() > 0 })
	start := time.Now()
	for i := range 20 {
		if _, err := d.EnqueueOnce(context.Background(), "", webhooks.LabStarted, map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("20 enqueues took %s while the receiver was slow", took)
	}
	if n := len(rcv.deliveries()); n != 0 {
		t.Fatalf("the slow receiver answered %d requests already; the test proves nothing", n)
	}
	if n := len(other.deliveries()); n != 0 {
		t.Errorf("a webhook subscribed to workshop.ended got %d lab.started deliveries", n)
	}
	if _, err := d.EnqueueOnce(context.Background(), "", "lab.exploded", nil); err == nil || !strings.Contains(err.Error(), "lab.started") {
		t.Errorf("an unknown type: %v, want an error listing the known ones", err)
	}
}

// EnqueueOnce records an event once per key, however often it is called.
func TestEnqueueOnce(t *testing.T) {
	st := openStore(t, testenv.Postgres(t))
	rcv := newReceiver(t, nil)
	w := register(t, st, rcv.URL)
	d := webhooks.New(st, nil, testLog(), fast)
	for i := range 3 {
		first, err := d.EnqueueOnce(context.Background(), "lab.completed:s1", webhooks.LabCompleted, map[string]int{"i": i})
		if err != nil {
			t.Fatal(err)
		}
		if first != (i == 0) {
			t.Errorf("call %d: first = %t", i, first)
		}
	}
	if l := deliveriesOf(t, st, w); len(l) != 1 {
		t.Errorf("%d deliveries for one key, want 1", len(l))
	}
	// A deleted webhook gets nothing more, and its pending deliveries fail.
	if err := st.DisableWebhook(context.Background(), w.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := d.EnqueueOnce(context.Background(), "", webhooks.LabCompleted, nil); err != nil {
		t.Fatal(err)
	}
	l := deliveriesOf(t, st, w)
	if len(l) != 1 || l[0].Status != store.DeliveryFailed {
		t.Errorf("after delete: %d deliveries, first %s", len(l), l[0].Status)
	}
	if err := st.DisableWebhook(context.Background(), w.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleting twice: %v, want ErrNotFound", err)
	}
}
