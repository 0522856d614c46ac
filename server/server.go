// Package server is podpath's HTTP side: pages, the JSON API, sign-in,
// server-sent events, the terminal websocket and metrics, on echo. It wires
// the store, the sandbox manager, the labs and the grader together.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/crypto/bcrypt"

	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
	"github.com/podpath/podpath/webhooks"
)

// Server is podpath serve.
type Server struct {
	cfg     Config
	store   *store.Store
	labs    []*labs.Lab
	tracks  []*labs.Track
	echo    *echo.Echo
	log     *slog.Logger
	engine  *session.Engine
	metrics *metrics
	md      *markdown
	pages   *pages
	limiter *loginLimiter
	terms   *terminals
	proxies []*net.IPNet // PODPATH_TRUSTED_PROXIES
	streams *streamCounter
	wsHub   *workshopHub
	sso     *ssoClient // nil without single sign-on
	hooks   *webhooks.Dispatcher
	// closing is closed when the server shuts down (ends workshop streams).
	closing   chan struct{}
	closeOnce sync.Once

	// joinMisses counts wrong join codes over all addresses.
	joinMisses *joinMissWatch

	dummyHash []byte
	ready     bool
	readyMu   sync.Mutex
}

// Deps are what the server is built from.
type Deps struct {
	Store     *store.Store
	Sandboxes session.Sandboxes
	Labs      []*labs.Lab
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
	dummy, _ := bcrypt.GenerateFromPassword([]byte("podpath dummy password"), bcrypt.DefaultCost)
	s := &Server{
		cfg: cfg, store: d.Store, labs: d.Labs, tracks: d.Tracks, log: d.Log,
		metrics: newMetrics(), md: newMarkdown(), limiter: newLoginLimiter(), joinMisses: newJoinMissWatch(),
		dummyHash: dummy, proxies: proxies, streams: newStreamCounter(cfg.MaxEventStreams),
		wsHub: newWorkshopHub(), closing: make(chan struct{}),
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
	s.hooks = webhooks.New(d.Store, nil, d.Log, webhooks.Options{Backoff: cfg.WebhookBackoff, MaxAttempts: cfg.WebhookMaxAttempts})
	s.engine = session.New(session.Config{
		NodeImage: cfg.NodeImage, CapacityCPU: cfg.CapacityCPU, CapacityMemory: cfg.CapacityMemory,
		ProvisionConcurrency: cfg.ProvisionConcurrency, IdleTimeout: cfg.IdleTimeout, MaxLifetime: cfg.MaxLifetime,
		HibernateAfter: cfg.HibernateAfter, WarnBefore: cfg.WarnBefore, WarmPool: cfg.WarmPool,
		ReapInterval: cfg.ReapInterval, HealthInterval: cfg.HealthInterval,
	}, session.Deps{Store: d.Store, Sandboxes: d.Sandboxes, Labs: d.Labs, Log: d.Log})
	// Take-overs first, so that their records say the server ended them
	// and not the instructor whose socket the closing shell ends.
	s.engine.OnEnd(func(id uuid.UUID) { s.wsHub.endTakeovers(id, "server") })
	s.engine.OnEnd(s.terms.closeSession)
	// Webhook events, written in the transaction of what they announce.
	s.engine.OnStarted(s.labStarted)
	s.engine.OnAttempted(s.attempted)
	s.metrics.registry.MustRegister(s.engine.Metrics().Collectors()...)
	s.metrics.countShells(s.terms.count)
	s.metrics.registry.MustRegister(s.joinMisses.total, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "podpath_limiter_buckets", Help: "Token buckets the sign-in and join-code limits keep in this process.",
	}, func() float64 { return float64(s.limiter.size()) }))
	if cfg.SSO() && len(cfg.OIDCAllowedDomains) == 0 {
		d.Log.Warn("single sign-on takes any address the provider has verified: anyone it vouches for gets an account and clusters; set PODPATH_OIDC_ALLOWED_DOMAINS to your company's domains")
	}
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
	e.GET("/sessions/:id", s.pageSession, s.requireUserPage, clusterWork)
	e.POST("/sessions/:id/end", s.formEnd, s.requireUserPage, clusterWork)
	s.workshopPageRoutes(e)
	s.teamPageRoutes(e)
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
		return apiError(http.StatusNotFound, fmt.Sprintf("no API endpoint %s %s; see docs/API.md", c.Request().Method, c.Request().URL.Path))
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
			return apiError(http.StatusUnauthorized, "sign in as an admin (or send an admin's Authorization: Bearer token); PODPATH_METRICS_LISTEN serves /metrics on a private address instead")
		}
		if u.Role != store.RoleAdmin {
			return apiError(http.StatusForbidden, "only admins may read this")
		}
		return next(c)
	}
}

// Handler is the server's HTTP handler (for tests).
func (s *Server) Handler() http.Handler { return s.echo }

// Run serves until ctx ends. It finds the clusters of active sessions first
// (while Docker does not answer it says so, changes nothing, serves
// /readyz as not ready, and tries again every few seconds), then reaps.
// At the end it shuts down gracefully: event streams end at once, requests
// in flight finish, and clusters being created are cancelled (they start
// over at the next start).
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
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
	srv := s.newHTTPServer(s.echo)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	// Webhook deliveries need only the database: they start at once
	// (sending what a stopped server left in the outbox) and stop after
	// the last request has written its events.
	hooksCtx, stopHooks := context.WithCancel(context.WithoutCancel(ctx))
	hooksDone := make(chan struct{})
	go func() { s.hooks.Run(hooksCtx); close(hooksDone) }()
	defer func() { stopHooks(); <-hooksDone }()
	if err := s.store.EndOpenTakeovers(ctx); err != nil {
		s.log.Warn("close take-over records a stopped server left open", "err", err)
	}
	opened := make(chan error, 1)
	go func() { opened <- s.open(ctx) }()
	var err error
	select {
	case err = <-errc:
	case err = <-opened:
		if err == nil {
			s.setReady(true)
			go s.engine.Run(ctx)
			go s.runWorkshops(ctx)
			select {
			case err = <-errc:
			case <-ctx.Done():
			}
		}
	case <-ctx.Done():
	}
	s.setReady(false)
	s.log.Info("shutting down: finishing requests in flight")
	s.closeOnce.Do(func() { close(s.closing) })
	s.engine.Close() // ends event streams, cancels provisioning
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

// open opens the engine, trying again while Docker does not answer.
func (s *Server) open(ctx context.Context) error {
	for {
		err := s.engine.Open(ctx)
		if err == nil {
			return nil
		}
		if !errors.Is(err, session.ErrUnavailable) {
			return fmt.Errorf("find the clusters of active sessions: %w", err)
		}
		s.log.Error("not ready", "why", err.Error())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(s.cfg.ReapInterval):
		}
	}
}

func (s *Server) setReady(v bool) {
	s.readyMu.Lock()
	s.ready = v
	s.readyMu.Unlock()
}

func (s *Server) readyz(c echo.Context) error {
	s.readyMu.Lock()
	ready := s.ready
	s.readyMu.Unlock()
	// Why it is not ready goes to the log, not to whoever asks.
	if !ready {
		return c.String(http.StatusServiceUnavailable, "not ready\n")
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 3*time.Second)
	defer cancel()
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

// apiErr is an error that reaches an API client as {"error": message}.
type apiErr struct {
	Status  int
	Message string
	Extra   map[string]any
}

func (e *apiErr) Error() string { return e.Message }

func apiError(status int, msg string) error { return &apiErr{Status: status, Message: msg} }

func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	lg := lang(c)
	status, msg := http.StatusInternalServerError, translate("errinternal", lg)
	var extra map[string]any
	var ae *apiErr
	var he *echo.HTTPError
	var se *session.Error
	switch {
	case errors.As(err, &se):
		status, msg = sessionStatus(se.Kind), localizeSessionError(se.Message, lg)
	case errors.Is(err, store.ErrNotFound):
		status, msg = http.StatusNotFound, translate("errnotfound", lg)
	case errors.As(err, &ae):
		status, msg, extra = ae.Status, ae.Message, ae.Extra
	case errors.As(err, &he):
		status = he.Code
		msg = fmt.Sprint(he.Message)
		switch status {
		case http.StatusRequestEntityTooLarge:
			msg = translate("errtoolarge", lg)
		case http.StatusNotFound, http.StatusMethodNotAllowed:
			if msg == http.StatusText(status) { // echo's own: no such route
				msg = translate("errnopage", lg)
			}
		}
	default:
		s.log.Error("request failed", "path", c.Request().URL.Path, "err", err)
	}
	if isAPI(c) {
		body := map[string]any{"error": msg}
		for k, v := range extra {
			body[k] = v
		}
		_ = c.JSON(status, body)
		return
	}
	_ = s.pages.render(c, status, "error", s.pageData(c, map[string]any{"Status": status, "Message": msg}))
}

func isAPI(c echo.Context) bool {
	p := c.Request().URL.Path
	return len(p) >= 4 && p[:4] == "/api"
}

// sessionStatus maps the engine's kinds of error to HTTP statuses.
func sessionStatus(kind error) int {
	switch kind {
	case session.ErrNotFound:
		return http.StatusNotFound
	case session.ErrConflict:
		return http.StatusConflict
	case session.ErrGone:
		return http.StatusGone
	case session.ErrForbidden:
		return http.StatusForbidden
	case session.ErrUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}
