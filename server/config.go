package server

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podpath/podpath/session"
)

// Config is podpath serve's configuration. Every field has a flag and a
// PODPATH_* environment variable (DATABASE_URL for the database); see the
// README's configuration table.
type Config struct {
	// envProblems are environment values that could not be read.
	envProblems []string

	// Listen is the address the HTTP server listens on.
	Listen string
	// PublicURL is how learners reach the server (printed, used for the
	// websocket Origin check when set).
	PublicURL string
	// DatabaseURL is the Postgres connection string.
	DatabaseURL string
	// NodeImage is the kind node image learner clusters run.
	NodeImage string
	// LabDirs are extra lab folders beside the built-in labs.
	LabDirs []string

	// CapacityCPU is the CPU (in cores) learner clusters may use: a running
	// cluster costs about 0.15 core for its control plane plus 0.05 per
	// worker; a hibernated one costs none.
	CapacityCPU float64
	// CapacityMemory is the memory (in MiB) learner clusters may use,
	// running or hibernated: about 600 MiB plus 150 MiB per worker.
	CapacityMemory int
	// CapacityFromPool says the capacity is the lab pool's nodes, read by
	// the engine (the kubernetes backend); CapacityCPU and CapacityMemory
	// are then a ceiling over the whole pool where positive, none where 0.
	CapacityFromPool bool
	// ProvisionConcurrency is how many clusters are created at once.
	ProvisionConcurrency int

	// IdleTimeout ends a session nobody touched for this long.
	IdleTimeout time.Duration
	// MaxLifetime ends a session this long after it started (extend moves it).
	MaxLifetime time.Duration
	// Extension is how much "extend" adds, and MaxExtensions how often.
	Extension     time.Duration
	MaxExtensions int
	// HibernateAfter freezes an idle session's cluster after this long.
	HibernateAfter time.Duration
	// WarnBefore is when the page starts warning about the end.
	WarnBefore time.Duration

	// SecureCookies forces Secure cookies. They are Secure anyway when
	// PublicURL is https (see Secure), whichever way PublicURL was set.
	SecureCookies bool
	// SessionTTL is how long a sign-in lasts.
	SessionTTL time.Duration
	// AllowSignup lets anyone create a learner account. Off by default:
	// accounts come from an admin (podpath user create).
	AllowSignup bool

	// WarmPoolSpec is PODPATH_WARM_POOL: "2", or "workers=1:2,workers=2:1";
	// Validate parses it into WarmPool.
	WarmPoolSpec string
	WarmPool     []session.PoolTarget
	// ReapInterval is how often the engine looks at deadlines, idleness and
	// the pool; HealthInterval how often it asks Docker about each cluster.
	ReapInterval   time.Duration
	HealthInterval time.Duration
	// LeaseTTL is how long the engine lease of the leading replica lasts
	// without a renewal: another replica takes over this long after the
	// leader died (PODPATH_LEASE_TTL).
	LeaseTTL time.Duration

	// TrustedProxies are the CIDRs (or addresses) of reverse proxies whose
	// X-Forwarded-For, X-Real-IP and X-Forwarded-Proto headers are believed.
	// Empty: the client address is the connection's and those headers are
	// ignored.
	TrustedProxies []string

	// MetricsListen, when set, is a second address that serves /metrics
	// without sign-in, for Prometheus; keep it private. On the main address
	// /metrics answers admins only.
	MetricsListen string
	// TrafficDomain is the DNS name under which a session's ports get host
	// names of their own (<session>-<port>.<domain>; server/traffic.go),
	// "off" for none; empty: localhost when PublicURL is on this machine.
	TrafficDomain string

	// HTTPReadTimeout bounds receiving a request's body (headers get 10 s).
	HTTPReadTimeout time.Duration
	// HTTPWriteTimeout bounds writing an ordinary response. Event streams
	// and terminals set their own deadlines; routes that wait on a cluster
	// (check, skip, end) get 30 minutes.
	HTTPWriteTimeout time.Duration
	// HTTPIdleTimeout closes keep-alive connections idle this long.
	HTTPIdleTimeout time.Duration
	// MaxEventStreams is how many event streams one user may hold open.
	MaxEventStreams int

	// Single sign-on with OpenID Connect (docs/TEAMS.md). It is on
	// when OIDCIssuer is set; the redirect URI to register at the provider
	// is PublicURL + /auth/oidc/callback.
	OIDCIssuer       string
	OIDCClientID     string
	OIDCClientSecret string
	// OIDCAllowedDomains are the e-mail domains that may sign in (empty:
	// any verified address).
	OIDCAllowedDomains []string
	// OIDCGroupsClaim names the ID token claim whose values are matched
	// against teams' SSO groups.
	OIDCGroupsClaim string
	// OIDCName labels the sign-in button.
	OIDCName string
	// PasswordLogin allows signing in (and signing up) with a password.
	// Off, nobody signs in with a password, admins included: accounts sign
	// in through single sign-on only.
	PasswordLogin bool
	// WebhookBackoff is the wait after a webhook delivery's first failure,
	// doubled after each further one (capped at an hour);
	// WebhookMaxAttempts is how many attempts a delivery gets before it is
	// failed (see docs/TEAMS.md).
	WebhookBackoff     time.Duration
	WebhookMaxAttempts int
}

// SSO reports whether single sign-on is configured.
func (c *Config) SSO() bool { return c.OIDCIssuer != "" }

// Secure reports whether cookies are marked Secure: forced, or because the
// public URL is https. It reads the final configuration, flags included.
func (c *Config) Secure() bool {
	return c.SecureCookies || strings.HasPrefix(strings.ToLower(c.PublicURL), "https://")
}

// DefaultConfig returns the defaults, overridden by PODPATH_* variables.
func DefaultConfig() Config {
	c := Config{
		Listen:               ":8080",
		DatabaseURL:          "postgres://podpath:podpath@localhost:5432/podpath",
		NodeImage:            "podpath/node:latest",
		CapacityCPU:          float64(runtime.NumCPU()) * 0.9,
		CapacityMemory:       memTotalMiB() * 3 / 4,
		ProvisionConcurrency: 2,
		IdleTimeout:          30 * time.Minute,
		MaxLifetime:          3 * time.Hour,
		Extension:            time.Hour,
		MaxExtensions:        3,
		HibernateAfter:       10 * time.Minute,
		WarnBefore:           5 * time.Minute,
		SessionTTL:           14 * 24 * time.Hour,
		ReapInterval:         5 * time.Second,
		HealthInterval:       15 * time.Second,
		LeaseTTL:             10 * time.Second,
		HTTPReadTimeout:      time.Minute,
		HTTPWriteTimeout:     2 * time.Minute,
		HTTPIdleTimeout:      2 * time.Minute,
		MaxEventStreams:      8,
		OIDCGroupsClaim:      "groups",
		OIDCName:             "Sign in with SSO",
		PasswordLogin:        true,
		WebhookBackoff:       2 * time.Second,
		WebhookMaxAttempts:   12,
	}
	c.applyEnv(os.Getenv)
	return c
}

// EnvVars documents each environment variable with its default.
var EnvVars = [][3]string{
	{"PODPATH_LISTEN", ":8080", "address to listen on"},
	{"PODPATH_PUBLIC_URL", "http://<host>:<port>", "URL learners use; https here turns on Secure cookies"},
	{"DATABASE_URL", "postgres://podpath:podpath@localhost:5432/podpath", "Postgres connection string (PODPATH_DATABASE_URL also works)"},
	{"PODPATH_NODE_IMAGE", "podpath/node:latest", "kind node image for learner clusters"},
	{"PODPATH_LABS", "", "extra lab folders, separated by commas"},
	{"PODPATH_CAPACITY_CPU", "0.9 × cores", "CPU cores learner clusters may use (running clusters only)"},
	{"PODPATH_CAPACITY_MEMORY", "¾ of RAM, in MiB", "memory learner clusters may use (running and hibernated)"},
	{"PODPATH_PROVISION_CONCURRENCY", "2", "clusters created at once"},
	{"PODPATH_IDLE_TIMEOUT", "30m", "end a session nobody touched for this long"},
	{"PODPATH_MAX_LIFETIME", "3h", "end a session this long after it started"},
	{"PODPATH_EXTENSION", "1h", "what the extend button adds"},
	{"PODPATH_MAX_EXTENSIONS", "3", "how often a session can be extended"},
	{"PODPATH_HIBERNATE_AFTER", "10m", "freeze an idle session's cluster after this long"},
	{"PODPATH_WARN_BEFORE", "5m", "warn this long before a session ends"},
	{"PODPATH_SESSION_TTL", "336h", "how long a sign-in lasts"},
	{"PODPATH_SECURE_COOKIES", "auto", "true forces Secure cookies (an https public URL turns them on anyway)"},
	{"PODPATH_ALLOW_SIGNUP", "false", "let anyone create a learner account (otherwise an admin makes accounts with podpath user create)"},
	{"PODPATH_WARM_POOL", "", "clusters created ahead and kept hibernated: a count (2) or counts by shape (workers=1:2,workers=2:1)"},
	{"PODPATH_TRUSTED_PROXIES", "", "CIDRs of reverse proxies whose X-Forwarded-For/X-Real-IP/X-Forwarded-Proto are believed, separated by commas"},
	{"PODPATH_METRICS_LISTEN", "", "a second address serving /metrics without sign-in (on the main address it is for admins only)"},
	{"PODPATH_TRAFFIC_DOMAIN", "localhost if the public URL is", "domain whose wildcard DNS record points here: a lab's web app on port P opens at <session>-P.<domain> (docs/LABS.md); off turns it off"},
	{"PODPATH_HTTP_READ_TIMEOUT", "1m", "longest time to receive a request's body"},
	{"PODPATH_HTTP_WRITE_TIMEOUT", "2m", "longest time to write an ordinary response (event streams, terminals and cluster work have their own)"},
	{"PODPATH_HTTP_IDLE_TIMEOUT", "2m", "close keep-alive connections idle this long"},
	{"PODPATH_MAX_EVENT_STREAMS", "8", "event streams (lab pages) one user may hold open"},
	{"PODPATH_OIDC_ISSUER", "", "OpenID provider's issuer URL; turns on single sign-on (register PODPATH_PUBLIC_URL/auth/oidc/callback there)"},
	{"PODPATH_OIDC_CLIENT_ID", "", "client ID podpath has at the OpenID provider"},
	{"PODPATH_OIDC_CLIENT_SECRET", "", "client secret podpath has at the OpenID provider"},
	{"PODPATH_OIDC_ALLOWED_DOMAINS", "", "e-mail domains that may sign in with SSO, separated by commas (empty: any verified address)"},
	{"PODPATH_OIDC_GROUPS_CLAIM", "groups", "ID token claim whose values are matched against teams' SSO groups"},
	{"PODPATH_OIDC_NAME", "Sign in with SSO", "label of the single sign-on button"},
	{"PODPATH_PASSWORD_LOGIN", "true", "false turns off password sign-in and sign-up for everyone (admins too): single sign-on only"},
	{"PODPATH_WEBHOOK_BACKOFF", "2s", "wait after a webhook delivery's first failure, doubled after each further one (at most 1h)"},
	{"PODPATH_WEBHOOK_MAX_ATTEMPTS", "12", "attempts a webhook delivery gets before it is marked failed"},
	{"PODPATH_LEASE_TTL", "10s", "with several replicas: how long after the leading replica died another takes its work over (docs/SCALING.md)"},
}

func (c *Config) applyEnv(get func(string) string) {
	str := func(key string, dst *string) {
		if v := get(key); v != "" {
			*dst = v
		}
	}
	dur := func(key string, dst *time.Duration) {
		if v := get(key); v != "" {
			if d, err := time.ParseDuration(v); err == nil {
				*dst = d
			}
		}
	}
	integer := func(key string, dst *int) {
		if v := get(key); v != "" {
			if n, err := strconv.Atoi(v); err == nil {
				*dst = n
			}
		}
	}
	// A switch that guards sign-in must not be read loosely: "FALSE" or
	// "off" leaving passwords on would fail open. Validate reports a value
	// that is not a boolean.
	boolean := func(key string, dst *bool) {
		if v := get(key); v != "" {
			b, err := strconv.ParseBool(v)
			switch strings.ToLower(v) {
			case "yes", "on":
				b, err = true, nil
			case "no", "off":
				b, err = false, nil
			}
			if err != nil {
				c.envProblems = append(c.envProblems, fmt.Sprintf("%s=%q is not true or false", key, v))
				return
			}
			*dst = b
		}
	}
	str("PODPATH_LISTEN", &c.Listen)
	str("PODPATH_PUBLIC_URL", &c.PublicURL)
	str("DATABASE_URL", &c.DatabaseURL)
	str("PODPATH_DATABASE_URL", &c.DatabaseURL)
	str("PODPATH_NODE_IMAGE", &c.NodeImage)
	if v := get("PODPATH_LABS"); v != "" {
		c.LabDirs = strings.Split(v, ",")
	}
	if v := get("PODPATH_CAPACITY_CPU"); v != "" {
		if cpu, err := ParseCPU(v); err != nil {
			c.envProblems = append(c.envProblems, fmt.Sprintf("PODPATH_CAPACITY_CPU=%q: %v", v, err))
		} else {
			c.CapacityCPU = cpu
		}
	}
	if v := get("PODPATH_CAPACITY_MEMORY"); v != "" {
		if mib, err := ParseMemoryMiB(v); err != nil {
			c.envProblems = append(c.envProblems, fmt.Sprintf("PODPATH_CAPACITY_MEMORY=%q: %v", v, err))
		} else {
			c.CapacityMemory = mib
		}
	}
	integer("PODPATH_PROVISION_CONCURRENCY", &c.ProvisionConcurrency)
	dur("PODPATH_IDLE_TIMEOUT", &c.IdleTimeout)
	dur("PODPATH_MAX_LIFETIME", &c.MaxLifetime)
	dur("PODPATH_EXTENSION", &c.Extension)
	integer("PODPATH_MAX_EXTENSIONS", &c.MaxExtensions)
	dur("PODPATH_HIBERNATE_AFTER", &c.HibernateAfter)
	dur("PODPATH_WARN_BEFORE", &c.WarnBefore)
	dur("PODPATH_SESSION_TTL", &c.SessionTTL)
	str("PODPATH_WARM_POOL", &c.WarmPoolSpec)
	// Whether an https public URL makes cookies Secure is decided from the
	// final configuration (Secure), after flags, not here.
	boolean("PODPATH_SECURE_COOKIES", &c.SecureCookies)
	boolean("PODPATH_ALLOW_SIGNUP", &c.AllowSignup)
	if v := get("PODPATH_TRUSTED_PROXIES"); v != "" {
		c.TrustedProxies = strings.Split(v, ",")
	}
	str("PODPATH_METRICS_LISTEN", &c.MetricsListen)
	str("PODPATH_TRAFFIC_DOMAIN", &c.TrafficDomain)
	dur("PODPATH_HTTP_READ_TIMEOUT", &c.HTTPReadTimeout)
	dur("PODPATH_HTTP_WRITE_TIMEOUT", &c.HTTPWriteTimeout)
	dur("PODPATH_HTTP_IDLE_TIMEOUT", &c.HTTPIdleTimeout)
	integer("PODPATH_MAX_EVENT_STREAMS", &c.MaxEventStreams)
	str("PODPATH_OIDC_ISSUER", &c.OIDCIssuer)
	str("PODPATH_OIDC_CLIENT_ID", &c.OIDCClientID)
	str("PODPATH_OIDC_CLIENT_SECRET", &c.OIDCClientSecret)
	if v := get("PODPATH_OIDC_ALLOWED_DOMAINS"); v != "" {
		c.OIDCAllowedDomains = strings.Split(v, ",")
	}
	str("PODPATH_OIDC_GROUPS_CLAIM", &c.OIDCGroupsClaim)
	str("PODPATH_OIDC_NAME", &c.OIDCName)
	boolean("PODPATH_PASSWORD_LOGIN", &c.PasswordLogin)
	dur("PODPATH_WEBHOOK_BACKOFF", &c.WebhookBackoff)
	integer("PODPATH_WEBHOOK_MAX_ATTEMPTS", &c.WebhookMaxAttempts)
	dur("PODPATH_LEASE_TTL", &c.LeaseTTL)
}

// trustedProxies parses TrustedProxies; a bare address is a /32 (or /128).
func (c *Config) trustedProxies() ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, raw := range c.TrustedProxies {
		v := strings.TrimSpace(raw)
		if v == "" {
			continue
		}
		if !strings.Contains(v, "/") {
			ip := net.ParseIP(v)
			if ip == nil {
				return nil, fmt.Errorf("trusted proxy %q is neither an address nor a CIDR like 10.0.0.0/8 (PODPATH_TRUSTED_PROXIES)", v)
			}
			bits := 128
			if ip.To4() != nil {
				bits = 32
			}
			out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		_, n, err := net.ParseCIDR(v)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q is not a CIDR like 10.0.0.0/8 (PODPATH_TRUSTED_PROXIES)", v)
		}
		out = append(out, n)
	}
	return out, nil
}

// Validate says what is wrong with the configuration.
func (c *Config) Validate() error {
	if len(c.envProblems) > 0 {
		return errors.New(strings.Join(c.envProblems, "; "))
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = 10 * time.Second
	}
	switch {
	case c.LeaseTTL < time.Second:
		return fmt.Errorf("PODPATH_LEASE_TTL=%s is too short: at least 1s (default 10s)", c.LeaseTTL)
	case c.IdleTimeout <= 0 || c.MaxLifetime <= 0:
		return fmt.Errorf("idle timeout and maximum lifetime must be positive")
	case c.HibernateAfter <= 0 || c.HibernateAfter >= c.IdleTimeout:
		return fmt.Errorf("hibernate-after (%s) must be positive and shorter than the idle timeout (%s)", c.HibernateAfter, c.IdleTimeout)
	case c.CapacityCPU < 0 || c.CapacityMemory < 0 || (!c.CapacityFromPool && (c.CapacityCPU == 0 || c.CapacityMemory == 0)):
		return fmt.Errorf("capacity must be positive (PODPATH_CAPACITY_CPU, PODPATH_CAPACITY_MEMORY)")
	case c.ProvisionConcurrency < 1:
		return fmt.Errorf("provision concurrency must be at least 1")
	case c.HTTPReadTimeout <= 0 || c.HTTPWriteTimeout <= 0 || c.HTTPIdleTimeout <= 0:
		return fmt.Errorf("the HTTP read, write and idle timeouts must be positive (PODPATH_HTTP_READ_TIMEOUT, PODPATH_HTTP_WRITE_TIMEOUT, PODPATH_HTTP_IDLE_TIMEOUT)")
	case c.MaxEventStreams < 1:
		return fmt.Errorf("max event streams must be at least 1 (PODPATH_MAX_EVENT_STREAMS)")
	case c.WebhookBackoff < 0 || c.WebhookBackoff > time.Hour:
		return fmt.Errorf("the webhook backoff (%s) must be between 0 (the default, 2s) and 1h (PODPATH_WEBHOOK_BACKOFF)", c.WebhookBackoff)
	case c.WebhookMaxAttempts < 0 || c.WebhookMaxAttempts > 100:
		return fmt.Errorf("webhook max attempts (%d) must be between 1 and 100, or 0 for the default 12 (PODPATH_WEBHOOK_MAX_ATTEMPTS)", c.WebhookMaxAttempts)
	}
	if d := strings.ToLower(c.TrafficDomain); d != "" && d != "off" {
		if !trafficDomainRE.MatchString(d) {
			return fmt.Errorf("PODPATH_TRAFFIC_DOMAIN %q is not a domain like labs.example.com (a port may follow: labs.example.com:8443), or off", c.TrafficDomain)
		}
		if c.PublicURL == "" {
			return fmt.Errorf("PODPATH_TRAFFIC_DOMAIN is set but PODPATH_PUBLIC_URL is not: a learner's app sends the browser to podpath's own address to sign in, so podpath must know it")
		}
		if pu, err := url.Parse(c.PublicURL); err == nil && strings.EqualFold(pu.Hostname(), strings.Split(d, ":")[0]) {
			return fmt.Errorf("PODPATH_TRAFFIC_DOMAIN %q is podpath's own host name: learners' apps need a domain of their own (labs.example.net beside podpath.example.com)", c.TrafficDomain)
		}
	}
	if c.WarmPoolSpec != "" {
		pool, err := session.ParsePool(c.WarmPoolSpec)
		if err != nil {
			return fmt.Errorf("PODPATH_WARM_POOL: %w", err)
		}
		c.WarmPool = pool
	}
	if c.ReapInterval <= 0 {
		c.ReapInterval = 5 * time.Second
	}
	if _, err := c.trustedProxies(); err != nil {
		return err
	}
	return c.validateSSO()
}

// validateSSO checks the single sign-on settings and normalises the
// allowed domains (lower case, no "@", no blanks).
func (c *Config) validateSSO() error {
	if !c.SSO() {
		switch {
		case c.OIDCClientID != "" || c.OIDCClientSecret != "" || len(c.OIDCAllowedDomains) > 0:
			return fmt.Errorf("PODPATH_OIDC_CLIENT_ID, PODPATH_OIDC_CLIENT_SECRET or PODPATH_OIDC_ALLOWED_DOMAINS is set but PODPATH_OIDC_ISSUER is not: set the provider's issuer URL to turn on single sign-on, or unset the others")
		case !c.PasswordLogin:
			return fmt.Errorf("PODPATH_PASSWORD_LOGIN=false turns off passwords, but no single sign-on is configured, so nobody could sign in: set PODPATH_OIDC_ISSUER, PODPATH_OIDC_CLIENT_ID and PODPATH_OIDC_CLIENT_SECRET, or leave password sign-in on")
		}
		return nil
	}
	u, err := url.Parse(c.OIDCIssuer)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("PODPATH_OIDC_ISSUER %q is not an issuer URL like https://login.example.com (the provider's discovery document is at ISSUER/.well-known/openid-configuration)", c.OIDCIssuer)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return fmt.Errorf("PODPATH_OIDC_ISSUER %q must use https (http is allowed for localhost only, for testing)", c.OIDCIssuer)
	}
	switch {
	case c.OIDCClientID == "":
		return fmt.Errorf("PODPATH_OIDC_ISSUER is set but PODPATH_OIDC_CLIENT_ID is not: register podpath as a client at the provider and set its client ID")
	case c.OIDCClientSecret == "":
		return fmt.Errorf("PODPATH_OIDC_ISSUER is set but PODPATH_OIDC_CLIENT_SECRET is not: podpath is a confidential client; set the secret the provider gave for client %q", c.OIDCClientID)
	case c.PublicURL == "":
		return fmt.Errorf("single sign-on needs PODPATH_PUBLIC_URL: the redirect URI registered at the provider is PODPATH_PUBLIC_URL/auth/oidc/callback")
	case strings.TrimSpace(c.OIDCGroupsClaim) == "":
		return fmt.Errorf("PODPATH_OIDC_GROUPS_CLAIM is empty: name the ID token claim that lists the user's groups (usually groups)")
	case c.AllowSignup && !c.PasswordLogin:
		return fmt.Errorf("PODPATH_ALLOW_SIGNUP=true makes password accounts but PODPATH_PASSWORD_LOGIN=false turns passwords off: unset PODPATH_ALLOW_SIGNUP (single sign-on makes an account at the first sign-in)")
	}
	if pu, err := url.Parse(c.PublicURL); err != nil || pu.Host == "" || (pu.Scheme != "https" && pu.Scheme != "http") {
		return fmt.Errorf("PODPATH_PUBLIC_URL %q is not a URL like https://podpath.example.com; single sign-on builds its redirect URI from it", c.PublicURL)
	}
	if strings.TrimSpace(c.OIDCName) == "" {
		c.OIDCName = "Sign in with SSO"
	}
	var domains []string
	for _, d := range c.OIDCAllowedDomains {
		d = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(d), "@"))
		if d == "" {
			continue
		}
		if strings.ContainsAny(d, "@/: ") || !strings.Contains(d, ".") && d != "localhost" {
			return fmt.Errorf("PODPATH_OIDC_ALLOWED_DOMAINS: %q is not an e-mail domain like example.com", d)
		}
		domains = append(domains, d)
	}
	c.OIDCAllowedDomains = domains
	return nil
}

// OIDCRedirectURL is the redirect URI to register at the OpenID provider.
func (c *Config) OIDCRedirectURL() string {
	return strings.TrimRight(c.PublicURL, "/") + "/auth/oidc/callback"
}

// trafficDomainRE is a DNS name, maybe with a port.
var trafficDomainRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:[0-9]{1,5})?$`)

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func memTotalMiB() int {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 4096
	}
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.Atoi(f[1])
			return kb / 1024
		}
	}
	return 4096
}

// ParseCPU reads a CPU amount in cores as Kubernetes writes one: "4",
// "3.5" or "3500m".
func ParseCPU(v string) (float64, error) {
	q, err := resource.ParseQuantity(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("not a CPU amount: write cores (4, 3.5) or millicores (3500m)")
	}
	return q.AsApproximateFloat64(), nil
}

// ParseMemoryMiB reads a memory amount: a bare number is MiB (16384), as
// the variable always took; with a Kubernetes unit it is that (16Gi,
// 16384Mi, 17G).
func ParseMemoryMiB(v string) (int, error) {
	v = strings.TrimSpace(v)
	if n, err := strconv.Atoi(v); err == nil {
		return n, nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return 0, fmt.Errorf("not a memory amount: write MiB (16384) or a Kubernetes quantity (16Gi)")
	}
	return int(q.Value() >> 20), nil
}
