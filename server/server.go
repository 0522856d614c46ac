// Package server is podpath's HTTP side: pages, the JSON API, sign-in,
// server-sent events, the terminal websocket and metrics, on echo. It wires
// the store, the sandbox manager, the labs and the grader together.
package server

import (
	"context"
	"errors"
	"fmt"
	"github.com/podpath/podpath/accounts"
	"github.com/podpath/podpath/limits"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/podpath/podpath/bus"
	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/replica"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
	"github.com/podpath/podpath/webhooks"
	"github.com/podpath/podpath/workshops"
)

// Server is podpath serve.
type Server struct {
	trafficState
	cfg      Config
	store    *store.Store
	labs     []*labs.Lab
	tracks   []*labs.Track
	echo     *echo.Echo
	log      *slog.Logger
	engine   *session.Sessions
	metrics  *metrics
	md       *markdown
	pages    *pages
	accounts *accounts.Accounts
	limiter  *limits.Limiter
	terms    *terminals
	proxies  []*net.IPNet // PODPATH_TRUSTED_PROXIES
	streams  *streamCounter
	wsHub    *workshopHub
	class    *workshops.Class
	sso      *ssoClient // nil without single sign-on
	hooks    *webhooks.Dispatcher
	replica  *replica.Replica
	// closing is closed when the server shuts down (ends workshop streams).
	closing   chan struct{}
	closeOnce sync.Once

	// joinMisses counts wrong join codes over all addresses.
	joinMisses *limits.JoinMissWatch
}

// Deps are what the server is built from (package app composes them).
type Deps struct {
	Store *store.Store
	// Sessions is the session engine, wherever it runs among the replicas.
	Sessions *session.Sessions
	// Accounts signs people up and in; Limits are the rate limits (its
	// own, and the join codes').
	Accounts *accounts.Accounts
	Limits   *limits.Limiter
	// Hooks sends webhook events (the outbox's dispatcher).
	Hooks *webhooks.Dispatcher
	// Bus carries live events between the replicas; Replica names this one.
	Bus     *bus.Bus
	Replica *replica.Replica
	Labs    []*labs.Lab
	// Tracks are the tracks the home page and GET /api/tracks show; nil
	// is none. Their labs should be among Labs (labs.CatalogTracks checks).
	Tracks []*labs.Track
	Log    *slog.Logger
}

// New builds the server; Run starts it.
func New(cfg Config, d Deps) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	proxies, err := cfg.trustedProxies()
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, store: d.Store, labs: d.Labs, tracks: d.Tracks, log: d.Log,
		metrics: newMetrics(), md: newMarkdown(), accounts: d.Accounts, limiter: d.Limits, joinMisses: limits.NewJoinMissWatch(),
		proxies: proxies, streams: newStreamCounter(cfg.MaxEventStreams),
		wsHub: newWorkshopHub(d.Bus, d.Store, d.Replica.ID, d.Log), replica: d.Replica, closing: make(chan struct{}),
	}
	if s.cfg.SSO() {
		s.sso = newSSOClient(&s.cfg)
	}
	pg, err := newPages()
	if err != nil {
		return nil, err
	}
	s.pages = pg
	s.terms = newTerminals(s)
	s.hooks = d.Hooks
	s.engine = d.Sessions
	s.class = &workshops.Class{
		Store: d.Store, Engine: d.Sessions, Labs: d.Labs, Live: s.wsHub, Limits: limits.JoinLimits{Limiter: d.Limits, Watch: s.joinMisses, Log: d.Log}, Ended: s.workshopEnded,
		TakeoverTTL: d.Replica.TTL(), Log: d.Log,
	}
	// Take-overs first, so that their records say the server ended them
	// and not the instructor whose socket the closing shell ends. A
	// session ended on any replica closes what this one holds of it.
	s.engine.OnEnd(func(id uuid.UUID) { s.wsHub.endLocal(id, "server") })
	s.engine.OnEnd(s.terms.closeSession)
	// What follows a start, whoever asked for it: the workshop's progress
	// carried and its boards told; webhook events, written in the
	// transaction of what they announce.
	s.engine.OnStarted(s.class.Started)
	s.engine.OnStarted(s.labStarted)
	s.engine.OnAttempted(s.attempted)
	s.metrics.registry.MustRegister(s.engine.Metrics().Collectors()...)
	s.metrics.countShells(s.terms.count)
	s.metrics.registry.MustRegister(s.joinMisses.Total, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "podpath_limiter_buckets", Help: "Token buckets the sign-in and join-code limits keep, in the database: every replica's.",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		n, err := s.store.RateBuckets(ctx)
		if err != nil {
			s.log.Warn("count rate-limit buckets for /metrics", "err", err)
			return math.NaN()
		}
		return float64(n)
	}))
	if shared := trafficSharesDomain(cfg); shared != "" {
		d.Log.Warn("PODPATH_TRAFFIC_DOMAIN and PODPATH_PUBLIC_URL share the domain " + shared + ": a learner's app can set cookies for it that podpath's pages then receive; give learners' apps a domain of their own (docs/SECURITY.md)")
	}
	if cfg.SSO() && len(cfg.OIDCAllowedDomains) == 0 {
		d.Log.Warn("single sign-on takes any address the provider has verified: anyone it vouches for gets an account and clusters; set PODPATH_OIDC_ALLOWED_DOMAINS to your company's domains")
	}
	s.SetListenAddr("") // until Serve (or App.Run) knows the address
	s.echo = s.routes()
	return s, nil
}

func (s *Server) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	e.IPExtractor = s.ipExtractor()
	e.Use(middleware.Recover())
	e.Use(s.requestLog)
	e.Use(s.bodyDeadline)
	e.Use(middleware.BodyLimit("1M"))
	e.Use(middleware.SecureWithConfig(middleware.SecureConfig{
		XSSProtection: "0", ContentTypeNosniff: "nosniff", XFrameOptions: "DENY",
		ReferrerPolicy: "same-origin", ContentSecurityPolicy: contentSecurityPolicy,
	}))
	e.Use(s.authenticate)
	e.Use(checkURLText)
	e.Use(checkFormText)

	e.GET("/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok\n") })
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", echo.WrapHandler(s.metricsHandler()), s.requireAdmin)
	e.GET("/static/*", staticHandler())

	// Pages.
	e.GET("/", s.pageHome)
	e.GET("/signup", s.pageSignup)
	e.POST("/signup", s.formSignup)
	e.GET("/login", s.pageLogin)
	e.POST("/login", s.formLogin)
	e.POST("/logout", s.formLogout)
	e.GET("/auth/oidc/login", s.ssoLogin)
	e.GET("/auth/oidc/callback", s.ssoCallback)
	// Routes that may wait on a cluster (waking, deleting, checking) get
	// clusterWork's longer write deadline.
	e.POST("/labs/:lab/start", s.formStart, s.requireUserPage, clusterWork)
	e.GET("/labs/:lab/files/*", s.labFile)
	e.GET("/labs/:lab/shared/*", s.labSharedFile)
	e.GET("/sessions/:id", s.pageSession, s.requireUserPage, clusterWork)
	e.POST("/sessions/:id/end", s.formEnd, s.requireUserPage, clusterWork)
	s.workshopPageRoutes(e)
	s.teamPageRoutes(e)
	s.trafficRoutes(e)
	e.GET("/join", s.pageJoinForm)
	e.GET("/join/:code", s.pageJoin)
	e.POST("/join/:code", s.formJoin, clusterWork)

	// The JSON API; see docs/API.md.
	api := e.Group("/api")
	api.POST("/signup", s.apiSignup)
	api.POST("/login", s.apiLogin)
	api.POST("/logout", s.apiLogout)
	api.GET("/labs", s.apiLabs)
	api.GET("/labs/:lab", s.apiLab)
	api.GET("/tracks", s.apiTracks)
	api.GET("/tracks/:track", s.apiTrack)
	auth := api.Group("", s.requireUserAPI)
	auth.GET("/me", s.apiMe)
	auth.GET("/me/teams", s.apiMyTeams)
	auth.POST("/labs/:lab/sessions", s.apiStart, clusterWork)
	auth.GET("/sessions", s.apiSessions)
	auth.GET("/sessions/:id", s.apiSession)
	auth.GET("/sessions/:id/events", s.apiEvents)
	auth.GET("/sessions/:id/steps/:step", s.apiStep)
	auth.POST("/sessions/:id/steps/:step/check", s.apiCheck, clusterWork)
	auth.POST("/sessions/:id/steps/:step/solve", s.apiSolve, clusterWork)
	auth.POST("/sessions/:id/extend", s.apiExtend, clusterWork)
	auth.POST("/sessions/:id/touch", s.apiTouch)
	auth.POST("/sessions/:id/retry", s.apiRetry, clusterWork)
	auth.DELETE("/sessions/:id", s.apiEnd, clusterWork)
	auth.GET("/sessions/:id/terminal/:node", s.apiTerminal, clusterWork)
	auth.GET("/admin/pool", s.apiAdminPool, s.requireAdmin)
	hooks := auth.Group("/admin/webhooks", s.requireAdminAPI)
	hooks.POST("", s.apiCreateWebhook)
	hooks.GET("", s.apiWebhooks)
	hooks.DELETE("/:id", s.apiDeleteWebhook)
	hooks.GET("/:id/deliveries", s.apiWebhookDeliveries)
	hooks.POST("/:id/deliveries/:delivery/retry", s.apiRetryDelivery)
	auth.POST("/sessions/:id/hand", s.apiHand)
	auth.POST("/sessions/:id/takeover/end", s.apiEndTakeover)
	api.POST("/join", s.apiJoin, clusterWork)
	staff := auth.Group("/workshops", s.requireInstructor)
	staff.POST("", s.apiCreateWorkshop)
	staff.GET("", s.apiWorkshops)
	staff.GET("/:id", s.apiWorkshop)
	staff.POST("/:id/code", s.apiRotateCode)
	staff.GET("/:id/board", s.apiBoard)
	staff.GET("/:id/events", s.apiWorkshopEvents)
	staff.POST("/:id/broadcast", s.apiBroadcast)
	staff.POST("/:id/extend", s.apiExtendWorkshop)
	staff.POST("/:id/end", s.apiEndWorkshop, clusterWork)
	staff.GET("/:id/results.csv", s.apiResultsCSV)
	staff.GET("/:id/results.json", s.apiResultsJSON)
	staff.GET("/:id/takeovers", s.apiTakeovers)
	staff.GET("/:id/learners/:learner", s.apiWorkshopLearner)
	staff.POST("/:id/learners/:learner/reset", s.apiResetLearner, clusterWork)
	staff.GET("/:id/learners/:learner/terminal/:node", s.apiWorkshopTerminal, clusterWork)
	s.teamRoutes(auth)
	api.Any("/*", func(c echo.Context) error {
		return errs.E(errs.NotFound, fmt.Sprintf("no API endpoint %s %s; see docs/API.md", c.Request().Method, c.Request().URL.Path))
	})
	return e
}

// ipExtractor finds the client's address: the connection's, unless it is a
// trusted proxy, whose X-Forwarded-For (or X-Real-IP) is believed. echo's
// default trust of loopback and private addresses is turned off: only the
// configured ranges count.
func (s *Server) ipExtractor() echo.IPExtractor {
	if len(s.proxies) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, n := range s.proxies {
		opts = append(opts, echo.TrustIPRange(n))
	}
	xff, xri := echo.ExtractIPFromXFFHeader(opts...), echo.ExtractIPFromRealIPHeader(opts...)
	return func(r *http.Request) string {
		if r.Header.Get(echo.HeaderXForwardedFor) != "" {
			return xff(r)
		}
		return xri(r)
	}
}

// contentSecurityPolicy lets pages run only the scripts this server serves
// (no inline script, no eval), talk only to this origin, and be framed by no
// one. Styles may be inline: xterm.js writes its own <style> elements.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{})
}

// requireAdmin lets admins only through: /metrics on the main address
// (Prometheus can send an admin's bearer token, or scrape
// PODPATH_METRICS_LISTEN instead).
func (s *Server) requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u := currentUser(c)
		if u == nil {
			return errs.E(errs.Unauthenticated, "sign in as an admin (or send an admin's Authorization: Bearer token); PODPATH_METRICS_LISTEN serves /metrics on a private address instead")
		}
		if u.Role != store.RoleAdmin {
			return errs.E(errs.Forbidden, "only admins may read this")
		}
		return next(c)
	}
}

// Serve serves HTTP until ctx ends (package app runs the engine, the
// event bus and the webhook dispatcher beside it). At the end it shuts down
// gracefully: event streams and terminals end at once, requests in flight
// finish.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	var metricsSrv *http.Server
	if s.cfg.MetricsListen != "" {
		mln, err := net.Listen("tcp", s.cfg.MetricsListen)
		if err != nil {
			return fmt.Errorf("listen on %s for metrics: %w (PODPATH_METRICS_LISTEN)", s.cfg.MetricsListen, err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", s.metricsHandler())
		metricsSrv = s.newHTTPServer(mux)
		go func() {
			if err := metricsSrv.Serve(mln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("metrics listener", "err", err)
			}
		}()
		s.log.Info("serving /metrics", "listen", mln.Addr().String())
	}
	s.SetListenAddr(ln.Addr().String())
	srv := s.newHTTPServer(s)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	hubCtx, stopHub := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHub()
	go s.wsHub.run(hubCtx)
	go s.limiter.Forget(hubCtx, time.Minute, s.log)
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	s.log.Info("shutting down: finishing requests in flight")
	s.closeOnce.Do(func() { close(s.closing) })
	s.wsHub.endAllTakeovers("server")
	s.terms.closeAll()
	shutCtx, done := context.WithTimeout(context.Background(), 20*time.Second)
	defer done()
	if metricsSrv != nil {
		_ = metricsSrv.Shutdown(shutCtx)
	}
	serr := srv.Shutdown(shutCtx)
	if err == nil && !errors.Is(serr, http.ErrServerClosed) {
		err = serr
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// RunWorkshops runs the workshop ticker (prepared clusters, ends, stray
// sessions) until ctx ends: work for the leading replica only. It first
// closes the take-over records a stopped server left open.
func (s *Server) RunWorkshops(ctx context.Context) {
	s.class.Run(ctx, s.cfg.ReapInterval, s.closing)
}

func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 3*time.Second)
	defer cancel()
	// Ready once this replica leads with its engine open (its clusters
	// found), or another replica leads. Why not goes to the log, not to
	// whoever asks.
	select {
	case <-s.closing:
		return c.String(http.StatusServiceUnavailable, "not ready\n")
	default:
	}
	if !s.engine.Ready(ctx) {
		return c.String(http.StatusServiceUnavailable, "not ready\n")
	}
	if err := s.store.Ping(ctx); err != nil {
		s.log.Warn("not ready: the database does not answer", "err", err)
		return c.String(http.StatusServiceUnavailable, "not ready\n")
	}
	return c.String(http.StatusOK, "ready\n")
}

func (s *Server) requestLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		req := c.Request()
		level := slog.LevelDebug
		if c.Response().Status >= 500 {
			level = slog.LevelError
		}
		s.log.Log(req.Context(), level, "request", "method", req.Method, "path", req.URL.Path,
			"status", c.Response().Status, "ms", time.Since(start).Milliseconds())
		return nil
	}
}

func isAPI(c echo.Context) bool {
	p := c.Request().URL.Path
	return len(p) >= 4 && p[:4] == "/api"
}
