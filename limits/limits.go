// Package limits keeps podpath's rate limits as token buckets in Postgres,
// shared by every replica: sign-in and sign-up (per address and email) and
// wrong join codes (per browser and address). See docs/SECURITY.md.
package limits

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podpath/podpath/store"
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

// Key names one bucket and its limit.
type Key struct {
	key string
	limit
}

// Limiter keeps the token buckets of the sign-in and join-code limits in
// the database (store.TakeTokens), so every replica draws on the same
// budget: two replicas behind a balancer give a guesser one budget, not
// two. A bucket is written only for a request a limit lets through (or a
// wrong join code): a flood of refused requests writes nothing. Buckets
// are forgotten once they are full again, which forgives nothing.
type Limiter struct {
	store *store.Store
	now   func() time.Time
}

func New(st *store.Store) *Limiter { return &Limiter{store: st, now: time.Now} }

func buckets(keys []Key) []store.Bucket {
	bs := make([]store.Bucket, len(keys))
	for i, k := range keys {
		bs[i] = store.Bucket{Key: k.key, PerMinute: k.perMinute, Burst: k.burst}
	}
	return bs
}

// Allow takes a token from every key's bucket if each has one, and none
// otherwise: a refused attempt does not also drain the buckets that had
// room, and writes nothing.
func (l *Limiter) Allow(ctx context.Context, keys ...Key) (bool, error) {
	return l.store.TakeTokens(ctx, l.now(), buckets(keys)...)
}

// Exhausted reports whether any key's bucket has no token left now. It
// takes nothing and writes nothing.
func (l *Limiter) Exhausted(ctx context.Context, keys ...Key) (bool, error) {
	return l.store.Exhausted(ctx, l.now(), buckets(keys)...)
}

// Charge takes a token from every key's bucket, even from one that has
// none left (it then owes, and refuses until it has paid back): for a
// request that was let through (exhausted said no) and turned out to
// count, such as a wrong join code. Requests let through at the same
// moment each pay: what slips past the limit at once is owed afterwards.
func (l *Limiter) Charge(ctx context.Context, keys ...Key) error {
	return l.store.ChargeTokens(ctx, l.now(), buckets(keys)...)
}

// Forget drops the buckets that are full again, every interval until ctx
// ends. Every replica runs it; a bucket dropped twice is dropped once.
func (l *Limiter) Forget(ctx context.Context, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := l.store.ForgetFullBuckets(ctx, l.now()); err != nil && ctx.Err() == nil {
				log.Warn("forgetting full rate-limit buckets failed; will retry", "err", err)
			}
		}
	}
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

// LoginKeys are the buckets one sign-in attempt takes from.
func LoginKeys(ip, email string) []Key {
	a, m := addrKey(ip), emailKey(email)
	return []Key{
		{"ae:" + a + " " + m, limitAddrEmail},
		{"a:" + a, limitAddr},
		{"e:" + m, limitEmail},
	}
}

// JoinMissKeys are the buckets a wrong join code takes from: the browser's
// (when the request names one) and the client address's, counted as an
// IPv4 address, or an IPv6 /64, /48 and /32.
func JoinMissKeys(ip, browser string) []Key {
	var keys []Key
	if browser != "" {
		keys = append(keys, Key{"jb:" + browser, limitJoinBrowser})
	}
	p := net.ParseIP(ip)
	switch {
	case p == nil:
		if len(ip) > 64 {
			ip = ip[:64]
		}
		keys = append(keys, Key{"ja:" + ip, limitJoinAddr})
	case p.To4() != nil:
		keys = append(keys, Key{"ja:" + p.To4().String(), limitJoinAddr})
	default:
		prefix := func(bits int) string { return p.Mask(net.CIDRMask(bits, 128)).String() + "/" + strconv.Itoa(bits) }
		keys = append(keys,
			Key{"ja:" + prefix(64), limitJoinAddr},
			Key{"ja:" + prefix(48), limitJoinAddr},
			Key{"jn:" + prefix(32), limitJoinNet})
	}
	return keys
}

func SignupKeys(ip string) []Key {
	return []Key{{"s:" + addrKey(ip), limitSignup}}
}

// joinMissAlarm is the rate of wrong join codes, over every address,
// above which the server warns once a minute that codes are being guessed.
const joinMissAlarm = 1000

// JoinMissWatch counts wrong join codes over all addresses: a metric, and
// a warning in the log past joinMissAlarm a minute. It blocks nothing:
// a global limit would let anyone stop every class from joining.
type JoinMissWatch struct {
	mu  sync.Mutex
	now func() time.Time
	// Total counts every wrong code; register it with the metrics.
	Total  prometheus.Counter
	window time.Time // the start of the current minute's count
	n      int
}

func NewJoinMissWatch() *JoinMissWatch {
	return &JoinMissWatch{now: time.Now, Total: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "podpath_join_code_misses_total",
		Help: "Join codes that opened no workshop (unknown, retired, or of a workshop not open), from any address.",
	})}
}

// Miss counts one wrong code and warns when the minute's count reaches
// the alarm.
func (m *JoinMissWatch) Miss(log *slog.Logger) {
	m.Total.Inc()
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

// JoinLimits is the workshops' budget of wrong join codes (it is a
// workshops.Limits): the limiter's buckets by browser and address, and
// the count over all addresses.
type JoinLimits struct {
	Limiter *Limiter
	Watch   *JoinMissWatch
	Log     *slog.Logger
}

// JoinRefused says whether a join from ip and browser is refused before
// its code is looked at.
func (j JoinLimits) JoinRefused(ctx context.Context, ip, browser string) (bool, error) {
	return j.Limiter.Exhausted(ctx, JoinMissKeys(ip, browser)...)
}

// JoinMissed charges a wrong code to ip and browser and counts it.
func (j JoinLimits) JoinMissed(ctx context.Context, ip, browser string) error {
	if err := j.Limiter.Charge(ctx, JoinMissKeys(ip, browser)...); err != nil {
		return err
	}
	j.Watch.Miss(j.Log)
	return nil
}
