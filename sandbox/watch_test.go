package sandbox_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podpath/podpath/sandbox"
)

// screen collects what a terminal prints.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *screen) has(want string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Contains(s.buf.String(), want)
}

func (s *screen) waitFor(t *testing.T, who, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !s.has(want) {
		if time.Now().After(deadline) {
			s.mu.Lock()
			t.Fatalf("%s never showed %q:\n%s", who, want, s.buf.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// watchersShareTheShell: an instructor's watcher (on any replica) is a
// client of the learner's own shell that neither resizes it nor, read-only,
// types into it; a take-over's client types into it.
func watchersShareTheShell(t *testing.T, m *sandbox.Manager, name string) {
	ctx := context.Background()
	target := m.Target(name)
	learner, err := target.Attach(ctx, "node01", 120, 40)
	if err != nil {
		t.Fatal(err)
	}
	defer learner.Close()
	var ls screen
	go io.Copy(&ls, learner)
	learner.Write([]byte("stty size\r"))
	ls.waitFor(t, "the learner", "40 120")

	watcher, err := target.Watch(ctx, "node01", false, 80, 24)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	var ws screen
	go io.Copy(&ws, watcher)
	learner.Write([]byte("echo seen-by-$((2*21))\r"))
	ws.waitFor(t, "the watcher", "seen-by-42")
	watcher.Write([]byte("echo typed-by-watcher\r"))
	time.Sleep(time.Second)
	learner.Write([]byte("stty size; echo size-$((1+1))\r"))
	ls.waitFor(t, "the learner", "size-2")
	if ls.has("echo typed-by-watcher") {
		t.Error("a read-only watcher's keys reached the shell")
	}
	ls.mu.Lock()
	out := ls.buf.String()
	ls.mu.Unlock()
	if i := strings.LastIndex(out, "stty size; echo size"); i < 0 || !strings.Contains(out[i:], "40 120") {
		t.Errorf("the learner's size changed when a watcher of 80x24 attached:\n%s", out)
	}

	ctl, err := target.Watch(ctx, "node01", true, 100, 30)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	ctl.Write([]byte("echo taken-$((3*3))\r"))
	ls.waitFor(t, "the learner", "taken-9")
}
