package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/podpath/podpath/app"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/server"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
)

// env is a running podpath server on a real database.
type env struct {
	t      *testing.T
	url    string
	dbURL  string
	store  *store.Store
	cancel context.CancelFunc
	done   chan error
	// logs is what the server logged, at debug level.
	logs *lockedWriter
}

func testConfig(dbURL string) server.Config {
	cfg := server.DefaultConfig()
	cfg.DatabaseURL = dbURL
	cfg.Listen = "127.0.0.1:0"
	cfg.CapacityCPU, cfg.CapacityMemory = 4, 8192
	// Sign-up is closed by default; most tests make their accounts through
	// it, as a learner on an open server would.
	cfg.AllowSignup = true
	return cfg
}

// startServer runs a server until the test ends (or stop is called).
func startServer(t *testing.T, cfg server.Config, mgr session.Sandboxes) *env {
	t.Helper()
	return startServerWith(t, cfg, mgr, nil)
}

// startServerWith is startServer with labs of the test's own beside the
// built-in ones.
func startServerWith(t *testing.T, cfg server.Config, mgr session.Sandboxes, extra []*labs.Lab, dirs ...string) *env {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// dirs are lab folders as PODPATH_LABS names them, loaded as serve
	// loads them.
	all, ps := labs.Catalog(dirs...)
	if fatal := ps.Fatal(); len(fatal) > 0 {
		t.Fatalf("labs: %v", fatal)
	}
	all = append(append([]*labs.Lab{}, all...), extra...)
	tracks, ps := labs.CatalogTracks(all, dirs...)
	if len(ps) > 0 {
		t.Fatalf("tracks: %v", ps)
	}
	level := slog.LevelWarn
	if os.Getenv("PODPATH_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	logs := &lockedWriter{b: &strings.Builder{}}
	log := slog.New(slog.NewMultiHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}),
		slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	srv, err := app.New(cfg, app.Deps{Store: st, Sandboxes: mgr, Labs: all, Tracks: tracks, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	e := &env{t: t, url: "http://" + ln.Addr().String(), dbURL: cfg.DatabaseURL, store: st, cancel: cancel, done: make(chan error, 1), logs: logs}
	go func() { e.done <- srv.Run(runCtx, ln) }()
	t.Cleanup(e.stop)
	// Up to 30 s: a server started after one was killed (holding the
	// engine lease) leads once that lease expires (PODPATH_LEASE_TTL).
	for range 300 {
		if res, err := http.Get(e.url + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return e
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("server not ready")
	return nil
}

// stop shuts the server down gracefully and waits for it.
func (e *env) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	select {
	case err := <-e.done:
		if err != nil {
			e.t.Errorf("server shutdown: %v", err)
		}
	case <-time.After(60 * time.Second):
		e.t.Error("server did not shut down within 60 s")
	}
	e.cancel = nil
	e.store.Close()
}

// client is an API client with a cookie jar, as a browser script would be.
type client struct {
	t    *testing.T
	base string
	http *http.Client
	csrf string
}

func newClient(t *testing.T, base string) *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: t, base: base, http: &http.Client{Jar: jar, Timeout: 5 * time.Minute}}
}

type response struct {
	status int
	body   []byte
	header http.Header
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("response %d is not JSON: %s", r.status, r.body)
	}
}

func (r response) errorMessage() string {
	var e struct{ Error string }
	json.Unmarshal(r.body, &e)
	return e.Error
}

// do sends a request; body may be a string (sent as JSON) or nil.
func (c *client) do(method, path string, body any, headers ...string) response {
	c.t.Helper()
	var rd io.Reader
	if s, ok := body.(string); ok {
		rd = strings.NewReader(s)
	} else if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.csrf != "" {
		req.Header.Set("X-CSRF-Token", c.csrf)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, body: b, header: res.Header}
}

// signup creates an account and keeps its cookie and CSRF token.
func (c *client) signup(email string) int64 {
	c.t.Helper()
	r := c.do("POST", "/api/signup", map[string]string{"email": email, "password": "correct horse", "name": "Test"})
	if r.status != 201 {
		c.t.Fatalf("signup %s: %d %s", email, r.status, r.body)
	}
	var out struct {
		User      server.UserView
		CSRFToken string
	}
	r.json(c.t, &out)
	c.csrf = out.CSRFToken
	return out.User.ID
}

// sse reads server-sent events until fn returns true or the time is up.
func (c *client) sse(path string, timeout time.Duration, fn func(event string, data []byte) bool) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", c.base+path, nil)
	// A stream outlives the client's request timeout.
	res, err := (&http.Client{Jar: c.http.Jar}).Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		c.t.Fatalf("events: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if fn(event, []byte(strings.TrimPrefix(line, "data: "))) {
				return
			}
		}
	}
	c.t.Fatalf("event stream ended before the awaited event (%v)", ctx.Err())
}

// manager is the real sandbox manager tests provision clusters with.
func manager(t *testing.T) *sandbox.Manager {
	t.Helper()
	testenv.NodeImage(t)
	return sandbox.NewManager()
}

// labSession makes an active lab session of lab for the user directly in
// the store, with a sandbox row in state "requested" and no cluster behind
// it: enough for every route that must answer before a cluster is involved.
func (e *env) labSession(t *testing.T, userID int64, lab string) *store.LabSession {
	t.Helper()
	id := uuid.New()
	sess, err := e.store.CreateLabSession(context.Background(), store.NewLabSession{
		ID: id, UserID: userID, LabID: lab, Lifetime: time.Hour, IdleTimeout: 30 * time.Minute,
		SandboxName: "ls-nocluster-" + strings.ReplaceAll(id.String(), "-", "")[:12], Image: "podpath/node:latest", Workers: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

// noRedirect makes the client stop at redirects, so tests read Location.
func (c *client) noRedirect() *client {
	c.http.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

// page GETs a page and returns its status and HTML.
func (c *client) page(path string) (int, string) {
	c.t.Helper()
	res, err := c.http.Get(c.base + path)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]*)"`)

// formToken reads the CSRF field of the first form on a page.
func (c *client) formToken(path string) string {
	c.t.Helper()
	status, html := c.page(path)
	m := csrfField.FindStringSubmatch(html)
	if status != 200 || m == nil || m[1] == "" {
		c.t.Fatalf("page %s (%d) has no CSRF field", path, status)
	}
	return m[1]
}

// postForm posts a form and returns the response (body read and closed).
func (c *client) postForm(path string, form url.Values) (*http.Response, string) {
	c.t.Helper()
	res, err := c.http.PostForm(c.base+path, form)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// lockedWriter lets a log handler write from many goroutines.
type lockedWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// podpathBinary builds the podpath binary once per test run.
func podpathBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "podpath-server-test-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "podpath")
		build := exec.Command("go", "build", "-o", binPath, "..")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// proc is a podpath serve process.
type proc struct {
	url  string
	cmd  *exec.Cmd
	done chan struct{}
}

// serveProcess runs `podpath serve` with cfg's database and limits, as an
// operator would, so a test can kill it with SIGKILL.
func serveProcess(t *testing.T, cfg server.Config, env ...string) *proc {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(podpathBinary(t), "serve")
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+cfg.DatabaseURL, "PODPATH_LISTEN="+addr,
		fmt.Sprintf("PODPATH_CAPACITY_CPU=%g", cfg.CapacityCPU), fmt.Sprintf("PODPATH_CAPACITY_MEMORY=%d", cfg.CapacityMemory),
		"PODPATH_HIBERNATE_AFTER="+cfg.HibernateAfter.String(), "PODPATH_IDLE_TIMEOUT="+cfg.IdleTimeout.String(),
		fmt.Sprintf("PODPATH_ALLOW_SIGNUP=%t", cfg.AllowSignup), "PODPATH_NODE_IMAGE="+cfg.NodeImage,
		"PODPATH_LOG_LEVEL=warn")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{url: "http://" + addr, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(p.kill)
	for range 300 {
		if res, err := http.Get(p.url + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return p
			}
		}
		select {
		case <-p.done:
			t.Fatal("podpath serve exited before it was ready")
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatal("podpath serve not ready within 30 s")
	return nil
}

// kill ends the process with SIGKILL: no graceful anything.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}
