package server

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (f *fakeClock) now() time.Time { return f.t }

func testLimiter() (*loginLimiter, *fakeClock) {
	clk := &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := newLoginLimiter()
	l.now = clk.now
	return l, clk
}

// Keys are short whatever the client sends as an email, and the same for
// the same address however it is typed.
func TestLimiterKeysAreBounded(t *testing.T) {
	l, _ := testLimiter()
	huge := strings.Repeat("a", 900<<10) + "@example.com"
	l.allow(loginKeys("203.0.113.7", huge)...)
	l.allow(loginKeys("2001:db8:1:2:3:4:5:6", "x@example.com")...)
	for k := range l.buckets {
		if len(k) > 80 {
			t.Errorf("a bucket key of %d bytes: %.100s...", len(k), k)
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

// Idle buckets are forgotten a few at a time as sign-ins go by, long before
// the set is large, and no single call walks all of them.
func TestLimiterSweepsAsItGoes(t *testing.T) {
	l, clk := testLimiter()
	for i := range 3000 {
		l.allow(loginKeys(fmt.Sprintf("198.51.%d.%d", i/250, i%250), fmt.Sprintf("u%d@example.com", i))...)
	}
	n := l.size()
	if n < 3000 {
		t.Fatalf("%d buckets after 3000 distinct attempts", n)
	}
	clk.t = clk.t.Add(l.idleAfter + time.Second)
	l.allow(loginKeys("192.0.2.1", "now@example.com")...)
	if removed := n + 3 - l.size(); removed < 1 || removed > sweepPerCall {
		t.Errorf("one call forgot %d buckets; want between 1 and %d", removed, sweepPerCall)
	}
	for range n / sweepPerCall {
		l.allow(loginKeys("192.0.2.1", "now@example.com")...)
	}
	if got := l.size(); got > 3 {
		t.Errorf("%d buckets left after the old ones went idle; want the 3 in use", got)
	}
	// A bucket in use is kept, with what it owes.
	for range 10 {
		l.allow(loginKeys("192.0.2.1", "now@example.com")...)
	}
	if l.allow(loginKeys("192.0.2.1", "now@example.com")...) {
		t.Error("the per-address-and-email limit was forgotten while in use")
	}
}

// An attacker failing on purpose from other addresses cannot lock a learner
// out: the learner's own address still gets in.
func TestLimiterNoVictimLockout(t *testing.T) {
	l, _ := testLimiter()
	refused := 0
	for range 30 {
		if !l.allow(loginKeys("203.0.113.7", "victim@example.com")...) {
			refused++
		}
	}
	if refused != 20 {
		t.Errorf("one address guessing one account: %d of 30 refused, want 20", refused)
	}
	if !l.allow(loginKeys("198.51.100.9", "victim@example.com")...) {
		t.Error("the victim is locked out by another address's failures")
	}
	// Spraying many accounts from one address is limited too.
	refused = 0
	for i := range 60 {
		if !l.allow(loginKeys("203.0.113.8", fmt.Sprintf("u%d@example.com", i))...) {
			refused++
		}
	}
	if refused != 30 {
		t.Errorf("one address spraying 60 accounts: %d refused, want 30", refused)
	}
	// Many addresses together on one account hit the per-email limit.
	refused = 0
	for i := range 200 {
		if !l.allow(loginKeys(fmt.Sprintf("192.0.2.%d", i), "target@example.com")...) {
			refused++
		}
	}
	if refused != 100 {
		t.Errorf("200 addresses on one account: %d refused, want 100", refused)
	}
}

// Refused sign-ins make no buckets: ten thousand attempts with distinct
// e-mails from an address already over its limit leave the table as small
// as before, so they cannot push another bucket out of it — a guesser's
// own, which would forgive what it owes.
func TestLimiterRefusalsMakeNoBuckets(t *testing.T) {
	l, _ := testLimiter()
	l.max = 5000
	// A guesser's bucket, used up.
	for range 10 {
		l.allow(loginKeys("198.51.100.7", "victim@example.com")...)
	}
	if l.allow(loginKeys("198.51.100.7", "victim@example.com")...) {
		t.Fatal("the 11th guess of one account from one address was let through")
	}
	// The same guesser floods from another address: 30 let through, the
	// rest refused.
	allowed := 0
	for i := range 10000 {
		if l.allow(loginKeys("203.0.113.7", fmt.Sprintf("spray%d@example.com", i))...) {
			allowed++
		}
	}
	if allowed != 30 {
		t.Errorf("%d of 10000 sign-ins from one address let through, want 30", allowed)
	}
	if n := l.size(); n > 100 {
		t.Errorf("the limiter keeps %d buckets after 10000 refused sign-ins from one address; want the few of the ones let through", n)
	}
	if l.allow(loginKeys("198.51.100.7", "victim@example.com")...) {
		t.Error("the flood pushed the guesser's used-up bucket out: guessing goes on")
	}
}

// Wrong join codes: an IPv6 /32 has 2000 a minute over all its /48s, and
// another /32 is not held back by it; an IPv4-mapped address counts as
// the IPv4 address. An address whose join budget is used up cannot get it
// back by flooding the table with refused sign-ins.
func TestLimiterJoinMisses(t *testing.T) {
	l, _ := testLimiter()
	misses := 0
	for i := range 2100 {
		keys := joinMissKeys(fmt.Sprintf("2001:db8:%x::1", i), "")
		if l.exhausted(keys...) {
			break
		}
		l.charge(keys...)
		misses++
	}
	if misses != 2000 {
		t.Errorf("wrong codes from distinct /48s of one /32: %d before the first refusal, want 2000", misses)
	}
	if l.exhausted(joinMissKeys("2001:db9::1", "")...) {
		t.Error("another /32 is refused")
	}
	if a, b := joinMissKeys("::ffff:192.0.2.1", ""), joinMissKeys("192.0.2.1", ""); len(a) != 1 || a[0] != b[0] {
		t.Errorf("an IPv4-mapped address counts as %v, the IPv4 address as %v", a, b)
	}

	ip := "192.0.2.44"
	for range 200 {
		l.charge(joinMissKeys(ip, "")...)
	}
	if !l.exhausted(joinMissKeys(ip, "")...) {
		t.Fatal("200 wrong codes from one IPv4 address did not use up its budget")
	}
	l.max = 5000
	for i := range 10000 {
		l.allow(loginKeys(ip, fmt.Sprintf("u%d@example.com", i))...)
	}
	if !l.exhausted(joinMissKeys(ip, "")...) {
		t.Error("refused sign-ins flushed the address's used-up join budget")
	}
}
