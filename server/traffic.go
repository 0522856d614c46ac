package server

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"golang.org/x/net/publicsuffix"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/internal/names"
	"github.com/podpath/podpath/store"
)

// Traffic ports (docs/LABS.md "Web apps in the cluster"): a learner opens
// what listens on a port of their cluster's control plane (a NodePort, or
// any server on the node) in the browser, through podpath, over HTTP and
// WebSockets. Each session's port gets a host name of its own,
// <session>-<port>.<traffic domain>, so one learner's app runs in an origin
// of its own: its scripts never run beside podpath's pages or another
// learner's app. Only the session's owner, and the instructor (or an admin)
// of the workshop it belongs to, get through:
//
//  1. the lab page links to /sessions/<id>/traffic/<port>/ on podpath's own
//     origin, where the sign-in cookie says who asks;
//  2. if they may, podpath sends them to
//     <session>-<port>.<domain>/.podpath/enter with a token good for a minute,
//     signed with the installation's key (every replica has it);
//  3. the app's host trades it for a cookie of its own (HttpOnly, for that
//     host only), which every request there must carry; a request without
//     one is sent back to step 1. The cookie is taken out of what the app
//     sees, and who may pass is asked again every few seconds, so an ended
//     session or a workshop left closes the door.

const (
	// trafficCookie is the traffic host's own sign-in; over https it is
	// trafficCookieSecure, which only the host itself can set.
	trafficCookie       = "podpath_traffic"
	trafficCookieSecure = "__Host-podpath_traffic"
	// trafficEnterPath trades an entry token for the cookie.
	trafficEnterPath = "/.podpath/enter"
	// trafficEnterTTL is how long an entry token is good; trafficCookieTTL
	// how long the cookie is (a lab session lasts at most a few hours).
	trafficEnterTTL  = time.Minute
	trafficCookieTTL = 12 * time.Hour
	// trafficRecheck is how long a "may pass" answer is kept.
	trafficRecheck = 5 * time.Second
)

// trafficSite is where traffic hosts live: <session>-<port>.<domain><port>.
type trafficSite struct {
	scheme string
	domain string // lower case; "" is off
	port   string // ":8080", or "" for the scheme's port
	// own says the domain is PODPATH_TRAFFIC_DOMAIN's, no name of
	// podpath's (localhost is both).
	own bool
}

// trafficSite is where traffic hosts live, worked out once (New, then
// SetListenAddr): every request asks.
func (s *Server) trafficSite() trafficSite {
	if p := s.site.Load(); p != nil {
		return *p
	}
	return s.cfg.trafficSite("")
}

// trafficSite works out the traffic hosts' domain: PODPATH_TRAFFIC_DOMAIN,
// or localhost when podpath itself is reached on this machine (browsers
// send every *.localhost name to this machine); "" when neither. listen
// is the address the server listens on, "" before it does.
func (c *Config) trafficSite(listen string) trafficSite {
	base := c.PublicURL
	if base == "" {
		// No public URL: on this machine only (a server listening on
		// every address is reached by names podpath does not know).
		host, port, err := net.SplitHostPort(listen)
		if err != nil || !(host == "localhost" || isLoopback(host)) {
			return trafficSite{}
		}
		base = "http://localhost:" + port
	}
	pu, err := url.Parse(base)
	if err != nil || pu.Host == "" {
		return trafficSite{}
	}
	site := trafficSite{scheme: pu.Scheme}
	if p := pu.Port(); p != "" {
		site.port = ":" + p
	}
	switch d := strings.ToLower(c.TrafficDomain); {
	case d == "off":
	case d != "":
		if h, p, err := net.SplitHostPort(d); err == nil {
			d, site.port = h, ":"+p
		}
		site.domain, site.own = d, true
	case pu.Hostname() == "localhost" || isLoopback(pu.Hostname()):
		site.domain = "localhost"
	}
	return site
}

// SetListenAddr tells the server the address it will serve on before
// Serve does: the session engine, which may start first, writes traffic
// addresses into new clusters.
func (s *Server) SetListenAddr(addr string) {
	site := s.cfg.trafficSite(addr)
	s.site.Store(&site)
}

// url is the address of path on a session's port.
func (t trafficSite) url(id uuid.UUID, port, path string) string {
	return t.scheme + "://" + id.String() + "-" + port + "." + t.domain + t.port + path
}

// TrafficPattern is the address of a session's traffic port with PORT in
// its place, as Killercoda's /etc/killercoda/host holds it. Where no
// traffic domain is set it is podpath's own page that says so.
func (s *Server) TrafficPattern(id uuid.UUID) string {
	site := s.trafficSite()
	if site.domain == "" {
		base := strings.TrimRight(s.cfg.PublicURL, "/")
		if base == "" {
			base = site.scheme + "://localhost" + site.port
		}
		return base + "/sessions/" + id.String() + "/traffic/PORT/"
	}
	return site.url(id, "PORT", "/")
}

// trafficHost reads a traffic host name: the session and the port.
func (s *Server) trafficHost(host string) (uuid.UUID, int, bool) {
	if !strings.Contains(host, ".") {
		return uuid.Nil, 0, false
	}
	site := s.trafficSite()
	if site.domain == "" {
		return uuid.Nil, 0, false
	}
	h := strings.ToLower(host)
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = hh
	}
	label, ok := strings.CutSuffix(h, "."+site.domain)
	if !ok || strings.Contains(label, ".") {
		return uuid.Nil, 0, false
	}
	i := strings.LastIndexByte(label, '-')
	if i < 0 {
		return uuid.Nil, 0, false
	}
	id, err := uuid.Parse(label[:i])
	port, perr := strconv.Atoi(label[i+1:])
	// One name per app: uuid.Parse and Atoi take other spellings too.
	if err != nil || perr != nil || port < 1 || port > 65535 || label != id.String()+"-"+strconv.Itoa(port) {
		return uuid.Nil, 0, false
	}
	return id, port, true
}

// ServeHTTP sends a traffic host's requests to the learner's app and all
// others to podpath.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id, port, ok := s.trafficHost(r.Host); ok {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		s.serveTraffic(rec, r, id, port)
		// Beside podpath's own requests in the log (debug level): an app's
		// requests, by session and port. A WebSocket's line comes when it
		// closes.
		s.log.Debug("traffic", "session", id, "port", port, "method", r.Method, "path", r.URL.Path,
			"status", rec.status, "ms", time.Since(start).Milliseconds())
		return
	}
	if s.underTrafficDomain(r.Host) {
		// The learners' apps' domain is not podpath's: a sign-in there
		// would be a cookie every app could overwrite.
		trafficError(w, http.StatusNotFound, "this name is not a lab app's address; podpath is at "+s.cfg.PublicURL)
		return
	}
	s.echo.ServeHTTP(w, r)
}

// underTrafficDomain reports whether host is PODPATH_TRAFFIC_DOMAIN or a
// name under it (localhost, the default, is podpath's own name too).
func (s *Server) underTrafficDomain(host string) bool {
	site := s.trafficSite()
	if !site.own {
		return false
	}
	d := site.domain
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = strings.TrimSuffix(hh, ".")
	}
	return h == d || strings.HasSuffix(h, "."+d)
}

// --- tokens ---

// trafficGrant is what a token or cookie says: who may reach which port
// of which session, until when, and what for.
type trafficGrant struct {
	purpose string // "enter" or "cookie"
	user    int64
	// signin is the hash of the podpath sign-in it came from (hex): the
	// cookie stops working when the user signs out there.
	signin  string
	session uuid.UUID
	port    int
	expires time.Time
}

func (g trafficGrant) payload() string {
	return strings.Join([]string{g.purpose, strconv.FormatInt(g.user, 10), g.signin, g.session.String(), strconv.Itoa(g.port), strconv.FormatInt(g.expires.Unix(), 10)}, "|")
}

func (s *Server) trafficMAC(payload string) ([]byte, error) {
	key, err := s.trafficKeyOnce()
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return m.Sum(nil), nil
}

// trafficKeyOnce reads the installation's traffic key (made by the first
// replica that asks; the same for every replica).
func (s *Server) trafficKeyOnce() ([]byte, error) {
	s.trafficKeyMu.Lock()
	defer s.trafficKeyMu.Unlock()
	if s.trafficKey != nil {
		return s.trafficKey, nil
	}
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	key, err := s.store.TrafficKey(ctx, fresh)
	if err != nil {
		return nil, fmt.Errorf("traffic key: %w", err)
	}
	s.trafficKey = key
	return key, nil
}

func (s *Server) signTraffic(g trafficGrant) (string, error) {
	p := g.payload()
	mac, err := s.trafficMAC(p)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString([]byte(p)) + "." + base64.RawURLEncoding.EncodeToString(mac), nil
}

// readTraffic checks a token for purpose, session and port.
func (s *Server) readTraffic(tok, purpose string, id uuid.UUID, port int) (trafficGrant, bool) {
	b64, sig, ok := strings.Cut(tok, ".")
	if !ok {
		return trafficGrant{}, false
	}
	p, err1 := base64.RawURLEncoding.DecodeString(b64)
	got, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil {
		return trafficGrant{}, false
	}
	want, err := s.trafficMAC(string(p))
	if err != nil || !hmac.Equal(got, want) {
		return trafficGrant{}, false
	}
	f := strings.Split(string(p), "|")
	if len(f) != 6 || f[0] != purpose || f[3] != id.String() || f[4] != strconv.Itoa(port) {
		return trafficGrant{}, false
	}
	user, err1 := strconv.ParseInt(f[1], 10, 64)
	exp, err2 := strconv.ParseInt(f[5], 10, 64)
	if err1 != nil || err2 != nil || time.Now().Unix() >= exp {
		return trafficGrant{}, false
	}
	return trafficGrant{purpose: purpose, user: user, signin: f[2], session: id, port: port, expires: time.Unix(exp, 0)}, true
}

// --- who may pass ---

// trafficDenied is why a user may not reach a session's ports, with the
// HTTP status to answer.
type trafficDenied struct {
	status int
	key    string // the message's key in messages (i18n.go)
	kv     []any
}

func (d *trafficDenied) Error() string { return msg("en", d.key, d.kv...) }

// trafficAccess says whether user may reach the session's ports now: its
// owner, or the instructor of its workshop (or an admin), while the
// session is active and its cluster ready. It returns the cluster's name,
// and whether user owns the session.
func (s *Server) trafficAccess(ctx context.Context, user *store.User, id uuid.UUID) (string, bool, error) {
	sess, err := s.store.LabSession(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return "", false, &trafficDenied{status: http.StatusNotFound, key: "errtrafficnosession"}
	}
	if err != nil {
		return "", false, err
	}
	if sess.UserID != user.ID {
		allowed := false
		if sess.WorkshopID != nil {
			w, err := s.store.WorkshopByID(ctx, *sess.WorkshopID)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return "", false, err
			}
			allowed = err == nil && (w.InstructorID == user.ID || user.Role == store.RoleAdmin)
		}
		if !allowed {
			return "", false, &trafficDenied{status: http.StatusForbidden, key: "errtrafficnotyours"}
		}
	}
	if sess.State != store.SessionActive {
		return "", false, &trafficDenied{status: http.StatusGone, key: "errtrafficended"}
	}
	sb, err := s.store.SandboxOf(ctx, sess.ID)
	if err != nil {
		return "", false, err
	}
	if st, ok := s.engine.State(sess.ID); ok {
		sb.State = st
	}
	if sb.State != store.SandboxReady {
		return "", false, &trafficDenied{status: http.StatusConflict, key: "errtrafficnotready", kv: []any{"state", sb.State}}
	}
	return sb.Name, sess.UserID == user.ID, nil
}

// trafficPass is a cached answer of trafficAccess.
type trafficPass struct {
	sandbox string
	err     error
	at      time.Time
}

// trafficAllowed is trafficAccess for a traffic host's request, its
// answer kept for trafficRecheck.
func (s *Server) trafficAllowed(ctx context.Context, g trafficGrant) (string, error) {
	id := g.session
	key := strconv.FormatInt(g.user, 10) + "/" + g.signin + "/" + id.String()
	if v, ok := s.trafficPasses.Load(key); ok {
		if p := v.(trafficPass); time.Since(p.at) < trafficRecheck {
			return p.sandbox, p.err
		}
	}
	if s.trafficStores.Add(1)%256 == 0 {
		s.trafficPasses.Range(func(k, v any) bool {
			if time.Since(v.(trafficPass).at) > time.Minute {
				s.trafficPasses.Delete(k)
			}
			return true
		})
	}
	// The sign-in the cookie came from, unexpired, with its user (gone
	// with the account too).
	err := errTrafficSignedOut
	var ws *store.WebSession
	if hash, herr := hex.DecodeString(g.signin); herr == nil {
		ws, err = s.store.WebSessionByToken(ctx, hash)
		if errors.Is(err, store.ErrNotFound) || (err == nil && ws.UserID != g.user) {
			err = errTrafficSignedOut
		}
	}
	var name string
	owner := false
	if err == nil {
		name, owner, err = s.trafficAccess(ctx, ws.User, id)
	}
	if err == nil && owner {
		// Using the app is using the lab: the session is not idle.
		s.engine.Touch(id)
	}
	var denied *trafficDenied
	if err == nil || errors.As(err, &denied) || errors.Is(err, errTrafficSignedOut) {
		s.trafficPasses.Store(key, trafficPass{sandbox: name, err: err, at: time.Now()})
	}
	return name, err
}

// errTrafficSignedOut is a cookie whose podpath sign-in has ended: the
// browser signs in again through podpath.
var errTrafficSignedOut = errors.New("signed out of podpath")

// --- podpath's side: /sessions/:id/traffic ---

func (s *Server) trafficRoutes(e *echo.Echo) {
	e.GET("/sessions/:id/traffic", s.pageTraffic, s.requireUserPage)
	e.GET("/sessions/:id/traffic/:port", s.enterTraffic, s.requireUserPage)
	e.GET("/sessions/:id/traffic/:port/*", s.enterTraffic, s.requireUserPage)
}

func (s *Server) trafficSession(c echo.Context) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return uuid.Nil, errs.E(errs.Invalid, msg(lang(c), "errsessionid", "id", fmt.Sprintf("%q", c.Param("id"))))
	}
	return id, nil
}

// deniedErr is a refusal as podpath's pages say it, in the reader's
// language.
func deniedErr(c echo.Context, err error) error {
	var d *trafficDenied
	if !errors.As(err, &d) {
		return err
	}
	kind := map[int]errs.Kind{http.StatusNotFound: errs.NotFound, http.StatusForbidden: errs.Forbidden, http.StatusGone: errs.Gone, http.StatusConflict: errs.Conflict}[d.status]
	kv := d.kv
	if d.key == "errtrafficnotready" {
		kv = []any{"state", translate("wscl_"+fmt.Sprint(d.kv[1]), lang(c))}
	}
	return errs.E(kind, msg(lang(c), d.key, kv...))
}

// pageTraffic is the port picker ({{TRAFFIC_SELECTOR}}, the lab page's
// Ports button): a port to open, and where it will open.
func (s *Server) pageTraffic(c echo.Context) error {
	id, err := s.trafficSession(c)
	if err != nil {
		return err
	}
	if _, _, err := s.trafficAccess(c.Request().Context(), currentUser(c), id); err != nil {
		return deniedErr(c, err)
	}
	if p := strings.TrimSpace(c.QueryParam("port")); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return errs.E(errs.Invalid, fmt.Sprintf("port %.12q: give a port number between 1 and 65535", p))
		}
		return c.Redirect(http.StatusSeeOther, "/sessions/"+id.String()+"/traffic/"+strconv.Itoa(n)+"/")
	}
	site := s.trafficSite()
	return s.pages.render(c, http.StatusOK, "ports", s.pageData(c, map[string]any{
		"SessionID": id.String(), "Pattern": s.TrafficPattern(id), "On": site.domain != "",
		"Node": names.ControlPlane,
	}))
}

// enterTraffic sends the user on to the port's own host with an entry
// token, if they may reach it.
func (s *Server) enterTraffic(c echo.Context) error {
	id, err := s.trafficSession(c)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(c.Param("port"))
	if err != nil || port < 1 || port > 65535 {
		return errs.E(errs.Invalid, fmt.Sprintf("port %.12q: give a port number between 1 and 65535", c.Param("port")))
	}
	u := currentUser(c)
	if _, _, err := s.trafficAccess(c.Request().Context(), u, id); err != nil {
		return deniedErr(c, err)
	}
	site := s.trafficSite()
	if site.domain == "" {
		return errs.E(errs.Unavailable, translate("portsoff", lang(c))+" (docs/LABS.md \"Web apps in the cluster\")")
	}
	ws := currentWebSession(c)
	if ws == nil {
		return errs.E(errs.Unauthenticated, "sign in to podpath first")
	}
	tok, err := s.signTraffic(trafficGrant{purpose: "enter", user: u.ID, signin: hex.EncodeToString(ws.TokenHash), session: id, port: port, expires: time.Now().Add(trafficEnterTTL)})
	if err != nil {
		return err
	}
	to := "/" + c.Param("*")
	if q := c.Request().URL.RawQuery; q != "" {
		to += "?" + q
	}
	v := url.Values{"t": {tok}, "to": {to}}
	return c.Redirect(http.StatusSeeOther, site.url(id, strconv.Itoa(port), trafficEnterPath+"?"+v.Encode()))
}

// --- the traffic host ---

// serveTraffic answers a request to a session's port host.
func (s *Server) serveTraffic(w http.ResponseWriter, r *http.Request, id uuid.UUID, port int) {
	w.Header().Set("Referrer-Policy", "same-origin")
	if r.URL.Path == trafficEnterPath {
		s.trafficEnter(w, r, id, port)
		return
	}
	var g trafficGrant
	ok := false
	// Every cookie of the name counts: an app may set one for the whole
	// traffic domain, which the browser sends beside this host's own.
	for _, ck := range r.Cookies() {
		if ck.Name == trafficCookie || ck.Name == trafficCookieSecure {
			if g, ok = s.readTraffic(ck.Value, "cookie", id, port); ok {
				break
			}
		}
	}
	var name string
	var err error
	if ok {
		name, err = s.trafficAllowed(r.Context(), g)
		ok = !errors.Is(err, errTrafficSignedOut)
	}
	if !ok {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			trafficError(w, http.StatusUnauthorized, "open this app from its lab page first (the link there signs you in to it)")
			return
		}
		// Sign in through podpath's own origin, then come back here.
		back := s.podpathBase() + "/sessions/" + id.String() + "/traffic/" + strconv.Itoa(port) + r.URL.EscapedPath()
		if r.URL.RawQuery != "" {
			back += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, back, http.StatusSeeOther)
		return
	}
	if err != nil {
		var d *trafficDenied
		if errors.As(err, &d) {
			trafficError(w, d.status, d.Error())
			return
		}
		s.log.Error("traffic: who may pass", "session", id, "err", err)
		trafficError(w, http.StatusInternalServerError, "podpath could not check who may open this app; try again")
		return
	}
	s.proxyTraffic(w, r, g, name, port)
}

// podpathBase is podpath's own origin as seen from a traffic host.
func (s *Server) podpathBase() string {
	if s.cfg.PublicURL != "" {
		return strings.TrimRight(s.cfg.PublicURL, "/")
	}
	site := s.trafficSite()
	return site.scheme + "://" + site.domain + site.port
}

func (s *Server) trafficEnter(w http.ResponseWriter, r *http.Request, id uuid.UUID, port int) {
	q := r.URL.Query()
	g, ok := s.readTraffic(q.Get("t"), "enter", id, port)
	if !ok {
		trafficError(w, http.StatusForbidden, "this link has expired or is not for this app: open it again from the lab page")
		return
	}
	val, err := s.signTraffic(trafficGrant{purpose: "cookie", user: g.user, signin: g.signin, session: id, port: port, expires: time.Now().Add(trafficCookieTTL)})
	if err != nil {
		trafficError(w, http.StatusInternalServerError, "podpath could not sign you in to this app; try again")
		return
	}
	secure := s.trafficSite().scheme == "https"
	name := trafficCookie
	if secure {
		// __Host-: no other host (another learner's app) can set it.
		name = trafficCookieSecure
	}
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: val, Path: "/", MaxAge: int(trafficCookieTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: secure,
	})
	http.Redirect(w, r, localPath(q.Get("to")), http.StatusSeeOther)
}

// localPath is to if it is a path of this host (no scheme, no host, no
// control characters a browser would drop), "/" otherwise.
func localPath(to string) string {
	if !strings.HasPrefix(to, "/") || strings.ContainsFunc(to, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return "/"
	}
	u, err := url.Parse(to)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || strings.HasPrefix(to, "//") {
		return "/"
	}
	return to
}

// proxyTraffic passes the request to port on the cluster's control plane,
// WebSocket upgrades included, without podpath's cookie.
func (s *Server) proxyTraffic(w http.ResponseWriter, r *http.Request, g trafficGrant, sandboxName string, port int) {
	// An app may stream (server-sent events, a WebSocket): the server's
	// write deadline is for podpath's own answers.
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	_ = rc.SetReadDeadline(time.Time{})
	// Who may pass is asked again while the request lasts: a WebSocket
	// or a stream ends when the session ends, the instructor leaves the
	// workshop, or the user signs out (cancelling the request closes the
	// connection to the app).
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		tick := time.NewTicker(2 * trafficRecheck)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if _, err := s.trafficAllowed(ctx, g); err != nil && ctx.Err() == nil {
					var d *trafficDenied
					if errors.As(err, &d) || errors.Is(err, errTrafficSignedOut) {
						cancel()
						return
					}
				}
			}
		}
	}()
	r = r.WithContext(ctx)
	proxy := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { s.rewriteTraffic(pr, sandboxName, port) },
		Transport: s.trafficTransport(),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return
			}
			trafficError(w, http.StatusBadGateway, fmt.Sprintf("nothing answers on port %d of %s (%v): is the app running, and listening on that port?", port, names.ControlPlane, err))
		},
	}
	proxy.ServeHTTP(w, r)
}

// rewriteTraffic makes a request for a traffic host one for the app on
// port of the sandbox's control plane (trafficTransport dials it): its
// host name kept, X-Forwarded-* set, and podpath's cookies taken out.
func (s *Server) rewriteTraffic(pr *httputil.ProxyRequest, sandboxName string, port int) {
	pr.Out.URL.Scheme = "http"
	pr.Out.URL.Host = net.JoinHostPort(sandboxName, strconv.Itoa(port))
	pr.Out.Host = pr.In.Host
	pr.SetXForwarded()
	// Behind a proxy that ends TLS the request reaching podpath is http:
	// the app is told the scheme the browser used, the public URL's.
	if site := s.trafficSite(); site.scheme != "" {
		pr.Out.Header.Set("X-Forwarded-Proto", site.scheme)
	}
	dropCookies(pr.Out, trafficCookie, trafficCookieSecure)
}

// dropCookies takes cookies out of a request's Cookie headers, leaving
// the others byte for byte (Go's cookie parser would drop or requote the
// values it finds odd, which an app may rely on).
func dropCookies(r *http.Request, names ...string) {
	var kept []string
	for _, h := range r.Header.Values("Cookie") {
		for _, pair := range strings.Split(h, ";") {
			name, _, _ := strings.Cut(strings.TrimSpace(pair), "=")
			if pair = strings.TrimSpace(pair); pair != "" && !slices.Contains(names, name) {
				kept = append(kept, pair)
			}
		}
	}
	r.Header.Del("Cookie")
	if len(kept) > 0 {
		r.Header.Set("Cookie", strings.Join(kept, "; "))
	}
}

// trafficError answers a traffic host's request with plain text: its
// pages are the learner's app's, not podpath's.
func trafficError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintf(w, "podpath: %s\n", msg)
}

// trafficState is what the server keeps for traffic hosts.
type trafficState struct {
	// site is where traffic hosts live (trafficSite).
	site          atomic.Pointer[trafficSite]
	trafficKeyMu  sync.Mutex
	trafficKey    []byte
	trafficPasses sync.Map
	// trafficStores counts answers kept, to forget old ones now and then.
	trafficStores atomic.Int64
	// transport carries every app's requests, keeping connections to
	// each sandbox's port open between them (transportOnce makes it).
	transport     *http.Transport
	transportOnce sync.Once
}

// trafficTransport is the connection pool to learners' apps: its
// requests' host is sandbox:port (rewriteTraffic), and a connection is
// dialled to that port of the sandbox's control plane. Connections are
// kept between requests (a browser's page loads many files), which spares
// a dial, and on the Docker backend a look-up of the nodes, per request;
// who may pass is still asked per request.
func (s *Server) trafficTransport() *http.Transport {
	s.transportOnce.Do(func() {
		s.transport = &http.Transport{
			DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
				name, p, err := net.SplitHostPort(addr)
				if err != nil {
					return nil, err
				}
				port, err := strconv.Atoi(p)
				if err != nil {
					return nil, err
				}
				return s.engine.Target(name).Dial(ctx, names.ControlPlane, port)
			},
			MaxIdleConnsPerHost:   32,
			IdleConnTimeout:       30 * time.Second,
			ResponseHeaderTimeout: 2 * time.Minute,
		}
	})
	return s.transport
}

// trafficSharesDomain is the registrable domain (example.com) of both
// the traffic domain and the public URL's host, "" when they differ.
func trafficSharesDomain(cfg Config) string {
	d := strings.ToLower(cfg.TrafficDomain)
	if d == "" || d == "off" || cfg.PublicURL == "" {
		return ""
	}
	if h, _, err := net.SplitHostPort(d); err == nil {
		d = h
	}
	pu, err := url.Parse(cfg.PublicURL)
	if err != nil {
		return ""
	}
	a, err1 := publicsuffix.EffectiveTLDPlusOne(d)
	b, err2 := publicsuffix.EffectiveTLDPlusOne(strings.ToLower(pu.Hostname()))
	if err1 != nil || err2 != nil || a != b {
		return ""
	}
	return a
}

// statusRecorder keeps the status a handler wrote; Unwrap lets
// http.ResponseController (the proxy's WebSocket hijack, its flushes)
// reach the connection's own writer.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 { // not an app's 103 Early Hints
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Hijack hands the connection to the proxy for a WebSocket, after the
// app said 101 Switching Protocols (written by the proxy on the
// connection itself).
func (r *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(r.ResponseWriter).Hijack()
	if err == nil && r.status == 0 {
		r.status = http.StatusSwitchingProtocols
	}
	return conn, brw, err
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
