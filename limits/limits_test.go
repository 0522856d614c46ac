package limits

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/store"
)

type fakeClock struct{ t time.Time }

func (f *fakeClock) now() time.Time { return f.t }

// testLimiter is a limiter on a fresh database (real Postgres) with a clock
// the test moves; url opens the same database again, as another replica.
func testLimiter(t *testing.T) (*Limiter, *fakeClock, string) {
	t.Helper()
	url := testenv.Postgres(t)
	l := openLimiter(t, url)
	if _, _, err := l.store.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	clk := &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	l.now = clk.now
	return l, clk, url
}

func openLimiter(t *testing.T, url string) *Limiter {
	t.Helper()
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return New(st)
}

func mustAllow(t *testing.T, l *Limiter, keys ...Key) bool {
	t.Helper()
	ok, err := l.Allow(context.Background(), keys...)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func mustExhausted(t *testing.T, l *Limiter, keys ...Key) bool {
	t.Helper()
	out, err := l.Exhausted(context.Background(), keys...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustCharge(t *testing.T, l *Limiter, keys ...Key) {
	t.Helper()
	if err := l.Charge(context.Background(), keys...); err != nil {
		t.Fatal(err)
	}
}

func bucketCount(t *testing.T, l *Limiter) int {
	t.Helper()
	n, err := l.store.RateBuckets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Keys are short whatever the client sends as an email, and the same for
// the same address however it is typed.
func TestLimiterKeysAreBounded(t *testing.T) {
	huge := strings.Repeat("a", 900<<10) + "@example.com"
	for _, k := range append(LoginKeys("203.0.113.7", huge), LoginKeys("2001:db8:1:2:3:4:5:6", "x@example.com")...) {
		if len(k.key) > 80 {
			t.Errorf("a bucket key of %d bytes: %.100s...", len(k.key), k.key)
		}
	}
	if emailKey(" Ada@Example.COM ") != emailKey("ada@example.com") {
		t.Error("the same email typed differently has two buckets")
	}
	// One IPv6 host picks addresses from its /64 at will.
	if addrKey("2001:db8:1:2::1") != addrKey("2001:db8:1:2:ffff::9") || addrKey("2001:db8:1:3::1") == addrKey("2001:db8:1:2::1") {
		t.Error("IPv6 addresses are not grouped by /64")
	}
}

// Buckets are forgotten once they are full again, and only then: a used-up
// bucket is kept with what it owes.
func TestLimiterForgetsFullBuckets(t *testing.T) {
	l, clk, _ := testLimiter(t)
	ctx := context.Background()
	for i := range 200 {
		mustAllow(t, l, LoginKeys(fmt.Sprintf("198.51.%d.%d", i/250, i%250), fmt.Sprintf("u%d@example.com", i))...)
	}
	if n := bucketCount(t, l); n != 600 {
		t.Fatalf("%d buckets after 200 distinct sign-ins, want 600", n)
	}
	for range 10 {
		mustAllow(t, l, LoginKeys("192.0.2.1", "now@example.com")...)
	}
	clk.t = clk.t.Add(30 * time.Second)
	// Half a minute on, the 200 sign-ins' buckets are full again, and so
	// are the per-address and per-email buckets of the ten (10 of 30 and
	// of 100 taken, 15 and 50 back). The per-address-and-email one (10 of
	// 10 taken, 5 back) is not.
	if n, err := l.store.ForgetFullBuckets(ctx, clk.t); err != nil || n != 602 {
		t.Fatalf("forgot %d buckets (%v), want the 602 full ones", n, err)
	}
	if n := bucketCount(t, l); n != 1 {
		t.Errorf("%d buckets left, want the 1 not full", n)
	}
	// It kept its level: the 5 tokens half a minute gave back, no more.
	allowed := 0
	for range 10 {
		if mustAllow(t, l, LoginKeys("192.0.2.1", "now@example.com")...) {
			allowed++
		}
	}
	if allowed != 5 {
		t.Errorf("%d of 10 sign-ins let through after forgetting, want 5: the per-address-and-email bucket lost its level", allowed)
	}
}

// An attacker failing on purpose from other addresses cannot lock a learner
// out: the learner's own address still gets in.
func TestLimiterNoVictimLockout(t *testing.T) {
	l, _, _ := testLimiter(t)
	refused := 0
	for range 30 {
		if !mustAllow(t, l, LoginKeys("203.0.113.7", "victim@example.com")...) {
			refused++
		}
	}
	if refused != 20 {
		t.Errorf("one address guessing one account: %d of 30 refused, want 20", refused)
	}
	if !mustAllow(t, l, LoginKeys("198.51.100.9", "victim@example.com")...) {
		t.Error("the victim is locked out by another address's failures")
	}
	// Spraying many accounts from one address is limited too.
	refused = 0
	for i := range 60 {
		if !mustAllow(t, l, LoginKeys("203.0.113.8", fmt.Sprintf("u%d@example.com", i))...) {
			refused++
		}
	}
	if refused != 30 {
		t.Errorf("one address spraying 60 accounts: %d refused, want 30", refused)
	}
	// Many addresses together on one account hit the per-email limit.
	refused = 0
	for i := range 200 {
		if !mustAllow(t, l, LoginKeys(fmt.Sprintf("192.0.2.%d", i), "target@example.com")...) {
			refused++
		}
	}
	if refused != 100 {
		t.Errorf("200 addresses on one account: %d refused, want 100", refused)
	}
}

// Refused sign-ins write no bucket: a thousand attempts with distinct
// e-mails from an address already over its limit leave the table as small
// as before, and the guesser's used-up bucket stays.
func TestLimiterRefusalsMakeNoBuckets(t *testing.T) {
	l, _, _ := testLimiter(t)
	for range 10 {
		mustAllow(t, l, LoginKeys("198.51.100.7", "victim@example.com")...)
	}
	if mustAllow(t, l, LoginKeys("198.51.100.7", "victim@example.com")...) {
		t.Fatal("the 11th guess of one account from one address was let through")
	}
	allowed := 0
	for i := range 1000 {
		if mustAllow(t, l, LoginKeys("203.0.113.7", fmt.Sprintf("spray%d@example.com", i))...) {
			allowed++
		}
	}
	if allowed != 30 {
		t.Errorf("%d of 1000 sign-ins from one address let through, want 30", allowed)
	}
	if n := bucketCount(t, l); n > 100 {
		t.Errorf("the limiter keeps %d buckets after 1000 sign-ins from one address, 970 refused; want the few of the ones let through", n)
	}
	if mustAllow(t, l, LoginKeys("198.51.100.7", "victim@example.com")...) {
		t.Error("the guesser's used-up bucket was lost: guessing goes on")
	}
}

// Wrong join codes: an IPv6 /32 has 2000 a minute over all its /48s, and
// another /32 is not held back by it; an IPv4-mapped address counts as
// the IPv4 address; misses go on counting past the limit (charge owes).
func TestLimiterJoinMisses(t *testing.T) {
	l, clk, _ := testLimiter(t)
	misses := 0
	for i := range 2100 {
		keys := JoinMissKeys(fmt.Sprintf("2001:db8:%x::1", i), "")
		if mustExhausted(t, l, keys...) {
			break
		}
		mustCharge(t, l, keys...)
		misses++
	}
	if misses != 2000 {
		t.Errorf("wrong codes from distinct /48s of one /32: %d before the first refusal, want 2000", misses)
	}
	if mustExhausted(t, l, JoinMissKeys("2001:db9::1", "")...) {
		t.Error("another /32 is refused")
	}
	if a, b := JoinMissKeys("::ffff:192.0.2.1", ""), JoinMissKeys("192.0.2.1", ""); len(a) != 1 || a[0] != b[0] {
		t.Errorf("an IPv4-mapped address counts as %v, the IPv4 address as %v", a, b)
	}
	ip := "192.0.2.44"
	for range 220 {
		mustCharge(t, l, JoinMissKeys(ip, "")...)
	}
	if !mustExhausted(t, l, JoinMissKeys(ip, "")...) {
		t.Fatal("220 wrong codes from one IPv4 address did not use up its budget")
	}
	// 20 owed: 200 a minute gives them back in 6 s, and one more token in
	// 0.3 s after that.
	clk.t = clk.t.Add(6 * time.Second)
	if !mustExhausted(t, l, JoinMissKeys(ip, "")...) {
		t.Error("the budget came back before what was owed was paid")
	}
	clk.t = clk.t.Add(time.Second)
	if mustExhausted(t, l, JoinMissKeys(ip, "")...) {
		t.Error("the budget did not come back at its rate")
	}
}

// Replicas share the budget: a guesser whose requests a balancer spreads
// over two replicas gets what one would give, even when the requests race.
func TestLimiterSharedByReplicas(t *testing.T) {
	a, clk, url := testLimiter(t)
	b := openLimiter(t, url)
	b.now = clk.now
	allowed := 0
	for i := range 30 {
		l := a
		if i%2 == 1 {
			l = b
		}
		if mustAllow(t, l, LoginKeys("203.0.113.7", "victim@example.com")...) {
			allowed++
		}
	}
	if allowed != 10 {
		t.Errorf("30 sign-ins spread over two replicas: %d let through, want the 10 of one budget", allowed)
	}
	// 40 at once, half on each replica, on a fresh address and account:
	// its buckets have no rows yet when the first requests decide.
	if n := allowAtOnce(t, 40, a, b, LoginKeys("198.51.100.20", "race@example.com")...); n != 10 {
		t.Errorf("40 sign-ins at once over two replicas: %d let through, want 10", n)
	}
}

// allowAtOnce sends n requests for keys at the same moment, alternately
// through each limiter (replica), and says how many were let through.
func allowAtOnce(t *testing.T, n int, a, b *Limiter, keys ...Key) int {
	t.Helper()
	var wg sync.WaitGroup
	var allowed atomic.Int32
	start := make(chan struct{})
	for i := range n {
		l := a
		if i%2 == 1 {
			l = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ok, err := l.Allow(context.Background(), keys...)
			if err != nil {
				t.Error(err)
			}
			if ok {
				allowed.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	return int(allowed.Load())
}

// A bucket that has no row yet is held while a request decides: requests
// racing to make it (more of them at once than its burst) let its burst
// through, no more.
func TestLimiterNewBucketRace(t *testing.T) {
	a, clk, url := testLimiter(t)
	b := openLimiter(t, url)
	b.now = clk.now
	key := Key{"test:race", limit{perMinute: 1, burst: 2}}
	for round := range 5 {
		key.key = fmt.Sprintf("test:race:%d", round)
		if n := allowAtOnce(t, 16, a, b, key); n != 2 {
			t.Fatalf("round %d: 16 requests at once on a new bucket of burst 2, over two replicas: %d let through", round, n)
		}
	}
}
