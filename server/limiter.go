package server

import (
	"container/list"
	"crypto/sha256"
	"encoding/base64"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
)

// Wrong join codes (see docs/SECURITY.md for what they cost a guesser). A
// learner's typos use up their own browser's budget only, so one learner
// behind a classroom's NAT cannot block the class; the per-address budgets
// are what bound a guesser, who can drop cookies at will. A right code
// takes nothing from any of them.
var (
	limitJoinBrowser = limit{perMinute: 10, burst: 10}     // one browser (the pre-session cookie) or account
	limitJoinAddr    = limit{perMinute: 200, burst: 200}   // an IPv4 address, an IPv6 /64, an IPv6 /48
	limitJoinNet     = limit{perMinute: 2000, burst: 2000} // an IPv6 /32: a provider's customer holds many /48s
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

// exhausted reports whether any key's bucket has no token left now. It
// takes nothing and makes no bucket.
func (l *loginLimiter) exhausted(keys ...limitKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	refused := l.refusedLocked(now, keys)
	l.sweep(now)
	return refused
}

// charge takes a token from every key's bucket, making the missing ones,
// even from a bucket that has none left (it then owes, and refuses until
// it has paid back): for a request that was let through (exhausted said
// no) and turned out to count, such as a wrong join code. Requests let
// through at the same moment cannot slip past the limit this way.
func (l *loginLimiter) charge(keys ...limitKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for _, k := range keys {
		l.entryLocked(k, now).l.ReserveN(now, 1)
	}
	l.sweep(now)
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

// joinMissKeys are the buckets a wrong join code takes from: the browser's
// (when the request names one) and the client address's, counted as an
// IPv4 address, or an IPv6 /64, /48 and /32.
func joinMissKeys(ip, browser string) []limitKey {
	var keys []limitKey
	if browser != "" {
		keys = append(keys, limitKey{"jb:" + browser, limitJoinBrowser})
	}
	p := net.ParseIP(ip)
	switch {
	case p == nil:
		if len(ip) > 64 {
			ip = ip[:64]
		}
		keys = append(keys, limitKey{"ja:" + ip, limitJoinAddr})
	case p.To4() != nil:
		keys = append(keys, limitKey{"ja:" + p.To4().String(), limitJoinAddr})
	default:
		prefix := func(bits int) string { return p.Mask(net.CIDRMask(bits, 128)).String() + "/" + strconv.Itoa(bits) }
		keys = append(keys,
			limitKey{"ja:" + prefix(64), limitJoinAddr},
			limitKey{"ja:" + prefix(48), limitJoinAddr},
			limitKey{"jn:" + prefix(32), limitJoinNet})
	}
	return keys
}

func signupKeys(ip string) []limitKey {
	return []limitKey{{"s:" + addrKey(ip), limitSignup}}
}

// joinMissAlarm is the rate of wrong join codes, over every address,
// above which the server warns once a minute that codes are being guessed.
const joinMissAlarm = 1000

// joinMissWatch counts wrong join codes over all addresses: a metric, and
// a warning in the log past joinMissAlarm a minute. It blocks nothing:
// a global limit would let anyone stop every class from joining.
type joinMissWatch struct {
	mu     sync.Mutex
	now    func() time.Time
	total  prometheus.Counter
	window time.Time // the start of the current minute's count
	n      int
}

func newJoinMissWatch() *joinMissWatch {
	return &joinMissWatch{now: time.Now, total: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "podpath_join_code_misses_total",
		Help: "Join codes that opened no workshop (unknown, retired, or of a workshop not open), from any address.",
	})}
}

// miss counts one wrong code and warns when the minute's count reaches
// the alarm.
func (m *joinMissWatch) miss(log *slog.Logger) {
	m.total.Inc()
	m.mu.Lock()
	now := m.now()
	if now.Sub(m.window) >= time.Minute {
		m.window, m.n = now, 0
	}
	m.n++
	alarm := m.n == joinMissAlarm
	m.mu.Unlock()
	if alarm {
		log.Warn("join codes are being guessed: many wrong codes within a minute, over all addresses; each address is limited (docs/SECURITY.md) and nothing else is blocked; watch podpath_join_code_misses_total, and rotate the code of a workshop that takes guests if it may have leaked",
			"misses", joinMissAlarm, "within", "1m")
	}
}
