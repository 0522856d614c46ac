package server_test

import (
	"context"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/store"
)

// A terminal for a node the cluster does not have is a 404 that keeps
// nothing: a loop of bad names (up to 64 KB each) grew the server's map of
// shells. A real node's terminal keeps one shell, across reconnects.
func TestTerminalOfNoSuchNode(t *testing.T) {
	e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
	c := newClient(t, e.url)
	id := c.signup("nodes@example.com")
	if err := e.store.SetUserRole(context.Background(), id, store.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	r := c.do("POST", "/api/labs/yaml-to-process/sessions", nil)
	if r.status != 201 {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	var sess struct{ ID string }
	r.json(t, &sess)
	waitReady(t, c, sess.ID)
	shells := func() string {
		t.Helper()
		res, err := c.http.Get(e.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		m := regexp.MustCompile(`(?m)^podpath_terminal_shells (\S+)$`).FindStringSubmatch(string(b))
		if m == nil {
			t.Fatalf("no podpath_terminal_shells in /metrics:\n%.500s", b)
		}
		return m[1]
	}
	for i := range 200 {
		name := strings.Repeat("x", 4000) + string(rune('a'+i%26)) + strings.Repeat("y", i)
		_, res, err := c.dialWS(t, "/api/sessions/"+sess.ID+"/terminal/"+name, e.url)
		if err == nil || res == nil || res.StatusCode != 404 {
			t.Fatalf("terminal of node %d…: %v %v", i, err, res)
		}
	}
	if n := shells(); n != "0" {
		t.Errorf("after 200 terminals of nodes that do not exist the server keeps %s shells", n)
	}
	for range 2 {
		tm, _, err := c.dialWS(t, "/api/sessions/"+sess.ID+"/terminal/controlplane", e.url)
		if err != nil {
			t.Fatal(err)
		}
		tm.conn.Close()
	}
	if n := shells(); n != "1" {
		t.Errorf("after two terminals of controlplane the server keeps %s shells, want 1", n)
	}
}
