package server_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/podpath/podpath/app"
	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/store"
)

// The session engine's faults as the HTTP side shows them, on a sandbox
// that fails on cue (no clusters needed).

func TestShutdownEndsEventStreams(t *testing.T) {
	fake := fakesandbox.New()
	e := startServer(t, testConfig(testenv.Postgres(t)), fake)
	c := newClient(t, e.url)
	c.signup("streams@example.com")
	r := c.do("POST", "/api/labs/yaml-to-process/sessions", nil)
	if r.status != 201 {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	var sess sessionView
	r.json(t, &sess)
	opened := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		req, _ := http.NewRequest("GET", e.url+"/api/sessions/"+sess.ID+"/events", nil)
		res, err := (&http.Client{Jar: c.http.Jar}).Do(req)
		if err != nil {
			return
		}
		close(opened)
		buf := make([]byte, 4096)
		for {
			if _, err := res.Body.Read(buf); err != nil {
				return
			}
		}
	}()
	select {
	case <-opened:
	case <-time.After(10 * time.Second):
		t.Fatal("event stream did not open")
	}
	start := time.Now()
	e.stop()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("shutdown with an open event stream took %s; the stream should end at once", took)
	}
	select {
	case <-ended:
	case <-time.After(2 * time.Second):
		t.Error("the event stream is still open after shutdown")
	}
}

func TestStartWithDockerDown(t *testing.T) {
	fake := fakesandbox.New()
	fake.SetDown(true)
	cfg := testConfig(testenv.Postgres(t))
	cfg.ReapInterval = 200 * time.Millisecond
	ctx := context.Background()
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	all, _ := labs.Builtin()
	logs := &lockedWriter{b: &strings.Builder{}}
	log := slog.New(slog.NewTextHandler(logs, nil))
	srv, err := app.New(cfg, app.Deps{Store: st, Sandboxes: fake, Labs: all, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(runCtx, ln) }()
	defer func() { cancel(); <-done }()
	url := "http://" + ln.Addr().String()
	readyz := func() int {
		res, err := http.Get(url + "/readyz")
		if err != nil {
			return 0
		}
		res.Body.Close()
		return res.StatusCode
	}
	time.Sleep(time.Second)
	if code := readyz(); code != 503 {
		t.Errorf("/readyz with Docker down: %d, want 503", code)
	}
	c := newClient(t, url)
	c.signup("down@example.com")
	if r := c.do("POST", "/api/labs/yaml-to-process/sessions", nil); r.status != 503 || !strings.Contains(r.errorMessage(), "Docker") {
		t.Errorf("start with Docker down: %d %s", r.status, r.body)
	}
	if !strings.Contains(logs.String(), "Docker does not answer") {
		t.Errorf("the log does not say what is wrong:\n%s", logs.String())
	}
	fake.SetDown(false)
	deadline := time.Now().Add(10 * time.Second)
	for readyz() != 200 {
		if time.Now().After(deadline) {
			t.Fatal("not ready 10 s after Docker came back")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := c.do("POST", "/api/labs/yaml-to-process/sessions", nil); r.status != 201 {
		t.Errorf("start once Docker answers: %d %s", r.status, r.body)
	}
}
