package server

import (
	"container/list"
	"crypto/sha256"
	"encoding/base64"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Sign-in limits (see docs/SECURITY.md). A guesser is slowed per address and
// email, and per address across emails; the per-email limit, counted over
// every address, is ten times the per-address one, so one address cannot
// lock a learner out of their own account by failing on purpose.
var (
	limitAddrEmail = limit{perMinute: 10, burst: 10}   // one address guessing one account
	limitAddr      = limit{perMinute: 30, burst: 30}   // one address spraying many accounts
	limitEmail     = limit{perMinute: 100, burst: 100} // every address together, one account
	limitSignup    = limit{perMinute: 10, burst: 10}   // accounts made from one address
	// wrong join codes from one address (a class behind one NAT typing
	// the right code takes nothing from it)
	limitJoinMiss = limit{perMinute: 10, burst: 20}
)

// limit is a token bucket's refill rate and size.
type limit struct {
	perMinute float64
	burst     int
}

// limitKey names one bucket and its limit.
type limitKey struct {
	key string
	limit
}

// loginLimiter keeps token buckets by key, least recently used first, and
// drops buckets idle longer than idleAfter a few at a time on every call,
// so no call ever walks the whole set. At most max buckets are kept.
//
// Buckets are made only for requests a limiter lets through: a refused
// request writes nothing, so a flood of refused ones (a thousand e-mails a
// second from an address already over its limit) cannot grow the set and
// push other buckets out of it, a guesser's own among them.
type loginLimiter struct {
	mu        sync.Mutex
	now       func() time.Time
	buckets   map[string]*list.Element // of *limiterEntry
	lru       *list.List               // least recently used at the front
	idleAfter time.Duration
	max       int
}

type limiterEntry struct {
	key  string
	l    *rate.Limiter
	seen time.Time
}

// sweepPerCall bounds the work one call does to forget idle buckets: it
// removes more than it can add (three per sign-in), so the set shrinks back.
const sweepPerCall = 8

func newLoginLimiter() *loginLimiter {
	return &loginLimiter{
		now: time.Now, buckets: map[string]*list.Element{}, lru: list.New(),
		// Longer than any bucket takes to fill up again, so forgetting one
		// forgives nothing.
		idleAfter: 15 * time.Minute,
		max:       100000,
	}
}

// allow takes a token from every key's bucket if each has one, and none
// otherwise: a refused attempt does not also drain the buckets that had
// room, and makes no bucket.
func (l *loginLimiter) allow(keys ...limitKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if l.refusedLocked(now, keys) {
		l.sweep(now)
		return false
	}
	for _, k := range keys {
		l.entryLocked(k, now).l.AllowN(now, 1)
	}
	l.sweep(now)
	return true
}

// exhausted reports whether a key's bucket has no token left now, taking
// nothing from it.
func (l *loginLimiter) exhausted(k limitKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	el := l.buckets[k.key]
	return el != nil && el.Value.(*limiterEntry).l.TokensAt(l.now()) < 1
}

// refusedLocked says whether a key's bucket (one that exists: a missing
// one is full) has no token now, and marks the existing ones used, so a
// bucket a guesser keeps hitting is the last to be forgotten. Callers hold mu.
func (l *loginLimiter) refusedLocked(now time.Time, keys []limitKey) bool {
	refused := false
	for _, k := range keys {
		el := l.buckets[k.key]
		if el == nil {
			continue
		}
		e := el.Value.(*limiterEntry)
		l.lru.MoveToBack(el)
		e.seen = now
		if e.l.TokensAt(now) < 1 {
			refused = true
		}
	}
	return refused
}

// entryLocked returns a key's bucket, made full if it was missing, marked
// used. Callers hold mu.
func (l *loginLimiter) entryLocked(k limitKey, now time.Time) *limiterEntry {
	el := l.buckets[k.key]
	if el == nil {
		el = l.lru.PushBack(&limiterEntry{key: k.key, l: rate.NewLimiter(rate.Limit(k.perMinute/60), k.burst)})
		l.buckets[k.key] = el
	} else {
		l.lru.MoveToBack(el)
	}
	e := el.Value.(*limiterEntry)
	e.seen = now
	return e
}

// sweep forgets up to sweepPerCall idle buckets from the front, and the
// oldest ones beyond max. Callers hold mu.
func (l *loginLimiter) sweep(now time.Time) {
	for i := 0; i < sweepPerCall; i++ {
		el := l.lru.Front()
		if el == nil {
			return
		}
		e := el.Value.(*limiterEntry)
		if now.Sub(e.seen) < l.idleAfter && l.lru.Len() <= l.max {
			return
		}
		l.lru.Remove(el)
		delete(l.buckets, e.key)
	}
}

func (l *loginLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// emailKey is a short, fixed-size key for an email as typed: trimmed,
// lowercased and hashed, so a megabyte of "email" costs 22 bytes.
func emailKey(email string) string {
	email = strings.TrimSpace(email)
	if len(email) > 320 {
		email = email[:320]
	}
	sum := sha256.Sum256([]byte(strings.ToLower(email)))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// addrKey is the client address a limit counts against: an IPv4 address,
// or an IPv6 address's /64 (one host usually has a whole /64 to pick from).
func addrKey(ip string) string {
	p := net.ParseIP(ip)
	if p == nil {
		if len(ip) > 64 {
			ip = ip[:64]
		}
		return ip
	}
	if p.To4() == nil {
		return p.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return p.String()
}

// loginKeys are the buckets one sign-in attempt takes from.
func loginKeys(ip, email string) []limitKey {
	a, m := addrKey(ip), emailKey(email)
	return []limitKey{
		{"ae:" + a + " " + m, limitAddrEmail},
		{"a:" + a, limitAddr},
		{"e:" + m, limitEmail},
	}
}

// joinMissKey is the bucket a wrong join code takes from.
func joinMissKey(ip string) limitKey { return limitKey{"j:" + addrKey(ip), limitJoinMiss} }

func signupKeys(ip string) []limitKey {
	return []limitKey{{"s:" + addrKey(ip), limitSignup}}
}
