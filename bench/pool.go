package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/podpath/podpath/accounts"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5"

	"github.com/podpath/podpath/app"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/server"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
)

// PoolOptions tune `podpath bench pool`.
type PoolOptions struct {
	Out io.Writer
	// Runs is how many starts are timed with the pool and without.
	Runs int
	// Lab is the lab started.
	Lab string
	// DatabaseURL is the Postgres role that may create the bench's scratch database.
	DatabaseURL string
	// Baseline also times starts without a pool (a fresh create each).
	Baseline bool
}

// Pool measures click-to-prompt, from the start request until the first
// node's terminal websocket has printed a shell prompt, on a real server
// with a warm pool of one and with none. Each start is ended before the
// next; with the pool, the next waits until the pool has refilled.
func Pool(ctx context.Context, o PoolOptions) error {
	if o.Runs <= 0 {
		o.Runs = 5
	}
	if o.Lab == "" {
		o.Lab = "yaml-to-process"
	}
	out := o.Out
	fmt.Fprintf(out, "machine: %s\n", Machine())
	dbURL, drop, err := scratchDatabase(ctx, o.DatabaseURL)
	if err != nil {
		return err
	}
	defer drop()

	results := map[bool][]time.Duration{}
	modes := []bool{true}
	if o.Baseline {
		modes = append(modes, false)
	}
	for _, pooled := range modes {
		ds, err := clickToPrompt(ctx, dbURL, o, pooled)
		if err != nil {
			return err
		}
		results[pooled] = ds
		label := "without a pool (a fresh create each time)"
		if pooled {
			label = "with a warm pool of one"
		}
		fmt.Fprintf(out, "click-to-prompt %s, %d starts: p50 %s, p95 %s, max %s (%s)\n", label, len(ds),
			percentile(ds, 50).Round(10*time.Millisecond), percentile(ds, 95).Round(10*time.Millisecond),
			percentile(ds, 100).Round(10*time.Millisecond), list(ds))
	}
	if o.Baseline {
		fmt.Fprintf(out, "the pool makes a start %.0f× faster (p50)\n", float64(percentile(results[false], 50))/float64(percentile(results[true], 50)))
	}
	return nil
}

func scratchDatabase(ctx context.Context, admin string) (string, func(), error) {
	if admin == "" {
		admin = os.Getenv("DATABASE_URL")
	}
	if admin == "" {
		admin = "postgres://podpath:podpath@localhost:5432/podpath"
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", nil, fmt.Errorf("connect to Postgres at DATABASE_URL (scripts/quickstart starts it): %w", err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("podpath_bench_%d", time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("create a scratch database (the role needs CREATEDB): %w", err)
	}
	cfg, _ := pgx.ParseConfig(admin)
	url := fmt.Sprintf("postgres://%s:%s@%s:%d/%s", cfg.User, cfg.Password, cfg.Host, cfg.Port, name)
	return url, func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(context.Background())
		}
	}, nil
}

// benchServer is a podpath server on a scratch database with the
// built-in labs and an admin signed in as c. stop ends the server and
// deletes the clusters it made.
type benchServer struct {
	c    *apiClient
	stop func()
}

func startBenchServer(ctx context.Context, dbURL string, setup func(*server.Config)) (*benchServer, error) {
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*benchServer, error) {
		st.Close()
		return nil, err
	}
	if _, _, err := st.Migrate(ctx); err != nil {
		return fail(err)
	}
	cfg := server.DefaultConfig()
	cfg.DatabaseURL, cfg.Listen = dbURL, "127.0.0.1:0"
	if setup != nil {
		setup(&cfg)
	}
	all, problems := labs.Builtin()
	if len(problems) > 0 {
		return fail(problems)
	}
	mgr := sandbox.NewManager()
	srv, err := app.New(cfg, app.Deps{Store: st, Sandboxes: session.Manager(mgr), Labs: all, Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fail(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(runCtx, ln) }()
	b := &benchServer{stop: func() {
		cancel()
		<-done
		// The pool's clusters outlive a server by design; the bench's go
		// with it.
		defer st.Close()
		inst, err := st.InstanceID(context.WithoutCancel(ctx))
		if err != nil {
			return
		}
		list, _ := mgr.List(context.WithoutCancel(ctx))
		for _, sb := range list {
			if strings.HasPrefix(sb.Name, "ls-"+inst+"-") {
				_ = mgr.Delete(context.WithoutCancel(ctx), sb.Name)
			}
		}
	}}
	b.c = &apiClient{base: "http://" + ln.Addr().String()}
	hash, _ := accounts.HashPassword("bench password")
	email := fmt.Sprintf("bench-%d@example.com", time.Now().UnixNano())
	if _, err := st.CreateUser(ctx, email, "Bench", hash, store.RoleAdmin); err != nil {
		b.stop()
		return nil, err
	}
	if err := waitFor(ctx, 30*time.Second, func() bool { return b.c.status("GET", "/readyz") == 200 }); err != nil {
		b.stop()
		return nil, fmt.Errorf("server not ready: %w", err)
	}
	var login struct{ Token string }
	if err := b.c.call("POST", "/api/login", map[string]string{"email": email, "password": "bench password"}, &login); err != nil {
		b.stop()
		return nil, err
	}
	b.c.token = login.Token
	return b, nil
}

// startSession starts lab and waits until its cluster is ready.
func (c *apiClient) startSession(ctx context.Context, lab string) (string, error) {
	var sess struct {
		ID      string
		Sandbox struct{ State string }
	}
	if err := c.call("POST", "/api/labs/"+lab+"/sessions", nil, &sess); err != nil {
		return "", err
	}
	var failed error
	if err := waitFor(ctx, 10*time.Minute, func() bool {
		c.call("GET", "/api/sessions/"+sess.ID, nil, &sess)
		if sess.Sandbox.State == store.SandboxFailed {
			failed = fmt.Errorf("the cluster failed")
		}
		return sess.Sandbox.State == store.SandboxReady || failed != nil
	}); err != nil || failed != nil {
		return "", fmt.Errorf("session %s never ready: %v %v", sess.ID, err, failed)
	}
	return sess.ID, nil
}

// clickToPrompt runs a server and times o.Runs starts.
func clickToPrompt(ctx context.Context, dbURL string, o PoolOptions, pooled bool) ([]time.Duration, error) {
	b, err := startBenchServer(ctx, dbURL, func(cfg *server.Config) {
		if pooled {
			cfg.WarmPoolSpec = "1"
		}
	})
	if err != nil {
		return nil, err
	}
	defer b.stop()
	c := b.c
	poolReady := func() bool {
		var v struct {
			Pool struct{ Shapes []struct{ Ready int } }
		}
		return c.call("GET", "/api/admin/pool", nil, &v) == nil && len(v.Pool.Shapes) == 1 && v.Pool.Shapes[0].Ready == 1
	}

	var ds []time.Duration
	for range o.Runs {
		if pooled {
			if err := waitFor(ctx, 5*time.Minute, poolReady); err != nil {
				return nil, fmt.Errorf("the pool did not fill: %w", err)
			}
		}
		start := time.Now()
		id, err := c.startSession(ctx, o.Lab)
		if err != nil {
			return nil, err
		}
		if err := c.prompt(ctx, id, sandbox.ControlPlane); err != nil {
			return nil, err
		}
		ds = append(ds, time.Since(start))
		if err := c.call("DELETE", "/api/sessions/"+id, nil, nil); err != nil {
			return nil, err
		}
	}
	return ds, nil
}

type apiClient struct {
	base, token string
}

func (c *apiClient) request(method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return http.DefaultClient.Do(req)
}

func (c *apiClient) status(method, path string) int {
	res, err := c.request(method, path, nil)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

func (c *apiClient) call(method, path string, body, into any) error {
	res, err := c.request(method, path, body)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	if into != nil && len(b) > 0 {
		return json.Unmarshal(b, into)
	}
	return nil
}

// prompt opens the node's terminal and waits for the shell prompt.
func (c *apiClient) prompt(ctx context.Context, session, node string) error {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+c.token)
	u := "ws" + strings.TrimPrefix(c.base, "http") + "/api/sessions/" + session + "/terminal/" + node + "?cols=120&rows=30"
	conn, res, err := websocket.DefaultDialer.DialContext(ctx, u, h)
	if err != nil {
		if res != nil {
			b, _ := io.ReadAll(res.Body)
			return fmt.Errorf("terminal: %w: %d %s", err, res.StatusCode, b)
		}
		return fmt.Errorf("terminal: %w", err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(2 * time.Minute))
	var seen strings.Builder
	for !strings.Contains(seen.String(), "root@"+node) {
		kind, data, err := conn.ReadMessage()
		if err != nil {
			return fmt.Errorf("terminal before the prompt (%q): %w", seen.String(), err)
		}
		if kind == websocket.BinaryMessage {
			seen.Write(data)
		}
	}
	return nil
}

func waitFor(ctx context.Context, timeout time.Duration, fn func() bool) error {
	deadline := time.Now().Add(timeout)
	for !fn() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}
