package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/podpath/podpath/internal/dockercli"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/server/terminal"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
)

type sessionView struct {
	ID        string
	State     string
	EndReason *string
	ExpiresAt time.Time
	Deadline  time.Time
	Sandbox   struct {
		Name     string
		State    string
		Error    *string
		Progress []sandbox.Event
		Nodes    []sandbox.Node
	}
	Steps []struct {
		ID, Status string
		Attempts   int
	}
}

type attemptView struct {
	Passed  bool
	Kind    string
	Results []struct {
		Passed   bool
		Observed string
		Feedback map[string]string
	}
}

// term is a terminal websocket client.
type term struct {
	t    *testing.T
	conn *websocket.Conn
	out  chan []byte
	ctl  chan terminal.Control
	buf  strings.Builder
}

func (c *client) terminal(t *testing.T, sessionID, node string, origin string) (*term, *http.Response, error) {
	return c.dialWS(t, "/api/sessions/"+sessionID+"/terminal/"+node+"?cols=80&rows=24", origin)
}

func (tm *term) send(s string) {
	tm.t.Helper()
	if err := tm.conn.WriteMessage(websocket.BinaryMessage, []byte(s)); err != nil {
		tm.t.Fatal(err)
	}
}

func (tm *term) resize(cols, rows int) {
	b, _ := json.Marshal(terminal.Control{Type: "resize", Cols: uint16(cols), Rows: uint16(rows)})
	tm.conn.WriteMessage(websocket.TextMessage, b)
}

// read reads output for d.
func (tm *term) read(d time.Duration) {
	deadline := time.After(d)
	for {
		select {
		case b, ok := <-tm.out:
			if !ok {
				return
			}
			tm.buf.Write(b)
		case <-deadline:
			return
		}
	}
}

// waitFor reads output until it contains want.
func (tm *term) waitFor(want string, timeout time.Duration) string {
	tm.t.Helper()
	deadline := time.After(timeout)
	for !strings.Contains(tm.buf.String(), want) {
		select {
		case b, ok := <-tm.out:
			if !ok {
				tm.t.Fatalf("terminal closed before %q appeared; output:\n%s", want, tm.buf.String())
			}
			tm.buf.Write(b)
		case <-deadline:
			tm.t.Fatalf("no %q in the terminal within %s; output:\n%s", want, timeout, tm.buf.String())
		}
	}
	return tm.buf.String()
}

// TestLabSession runs a lab session end to end against a real cluster:
// provisioning progress, the terminal on a real node, checks and skips,
// hibernation, a server restart, and the idle timeout.
func TestLabSession(t *testing.T) {
	mgr := manager(t)
	db := testenv.Postgres(t)
	cfg := testConfig(db)
	cfg.HibernateAfter = 25 * time.Second
	// The first server keeps a warm pool of one, with memory for one
	// cluster only, so the pool does not refill under the test. The
	// learner's cluster is the pool's: woken, nodes Ready, lab set up.
	pooled := cfg
	pooled.WarmPool = []session.PoolTarget{{Workers: 1, Size: 1}}
	pooled.CapacityMemory = 1000
	e := startServer(t, pooled, session.Manager(mgr))
	ada := newClient(t, e.url)
	adaID := ada.signup("ada@example.com")
	if err := e.store.SetUserRole(context.Background(), adaID, store.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	var pool struct {
		Pool struct {
			Shapes []struct{ Ready, Creating int }
		}
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		r := ada.do("GET", "/api/admin/pool", nil)
		r.json(t, &pool)
		if len(pool.Pool.Shapes) == 1 && pool.Pool.Shapes[0].Ready == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the warm pool has no ready cluster after 5 min: %s", r.body)
		}
		time.Sleep(2 * time.Second)
	}
	if err := ada.do("GET", "/api/admin/pool", nil); err.status != 200 {
		t.Fatalf("admin pool: %d", err.status)
	}
	bob := newClient(t, e.url)
	bob.signup("bob@example.com")
	if r := bob.do("GET", "/api/admin/pool", nil); r.status != 403 {
		t.Errorf("a learner reads the pool: %d", r.status)
	}

	r := ada.do("POST", "/api/labs/yaml-to-process/sessions", nil)
	if r.status != 201 {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	var sess sessionView
	r.json(t, &sess)
	t.Cleanup(func() { mgr.Delete(context.Background(), sess.Sandbox.Name) })
	if r := ada.do("POST", "/api/labs/yaml-to-process/sessions", nil); r.status != 409 || !strings.Contains(string(r.body), sess.ID) {
		t.Errorf("second start: %d %s, want 409 naming the active session", r.status, r.body)
	}

	// Provisioning progress streams until the cluster is ready.
	var stages []string
	ada.sse("/api/sessions/"+sess.ID+"/events", 10*time.Minute, func(event string, data []byte) bool {
		switch event {
		case "progress":
			var ev sandbox.Event
			json.Unmarshal(data, &ev)
			if ev.Done {
				stages = append(stages, ev.Stage)
			}
		case "state":
			var st struct{ State string }
			json.Unmarshal(data, &st)
			if st.State == "failed" {
				t.Fatalf("provisioning failed: %s", data)
			}
			return st.State == "ready"
		case "session":
			var v sessionView
			json.Unmarshal(data, &v)
			return v.Sandbox.State == "ready"
		}
		return false
	})
	// From the pool: the learner hears the claim and the lab setup; the
	// create's stages were recorded when the pool made the cluster.
	for _, want := range []string{"claim", "lab-setup"} {
		if !strings.Contains(strings.Join(stages, " "), want) {
			t.Errorf("progress events %v lack stage %s", stages, want)
		}
	}
	ada.do("GET", "/api/sessions/"+sess.ID, nil).json(t, &sess)
	var recorded []string
	for _, ev := range sess.Sandbox.Progress {
		if ev.Done {
			recorded = append(recorded, ev.Stage)
		}
	}
	for _, want := range []string{"nodes", "control-plane", "cni", "nodes-ready", "pod-network", "claim", "lab-setup"} {
		if !strings.Contains(strings.Join(recorded, " "), want) {
			t.Errorf("recorded progress %v lacks stage %s", recorded, want)
		}
	}
	if !strings.Contains(sess.Sandbox.Name, "-p") {
		t.Errorf("the session's cluster %s is not the pool's", sess.Sandbox.Name)
	}
	if sess.Sandbox.State != "ready" || len(sess.Sandbox.Nodes) != 2 || sess.Sandbox.Nodes[1].Alias != "node01" {
		t.Fatalf("session after provisioning: %+v", sess.Sandbox)
	}

	t.Run("terminal on a real node", func(t *testing.T) {
		tm, _, err := ada.terminal(t, sess.ID, "node01", e.url)
		if err != nil {
			t.Fatal(err)
		}
		tm.waitFor("root@node01:~# ", 90*time.Second) // a learner waits for the prompt
		tm.send("echo $((6*7))\r")
		tm.waitFor("42\r\n", 30*time.Second)
		tm.send("hostname\r")
		tm.waitFor("node01\r\n", 10*time.Second)
		// The resize reaches the shell (through tmux) on its own time: ask
		// until the shell says the new size.
		tm.resize(100, 30)
		for try := 0; ; try++ {
			tm.send("stty size\r")
			tm.read(time.Second)
			if strings.Contains(tm.buf.String(), "30 100") {
				break
			}
			if try == 20 {
				t.Fatalf("the shell never saw the resize to 100x30:\n%s", tm.buf.String())
			}
		}
		tm.send("echo marker-$((40+2))\r")
		tm.waitFor("marker-42", 10*time.Second)
		tm.conn.Close()

		// A reload attaches to the same shell and replays what it missed.
		again, _, err := ada.terminal(t, sess.ID, "node01", e.url)
		if err != nil {
			t.Fatal(err)
		}
		hello := <-again.ctl
		if hello.Type != "hello" || hello.Replayed == 0 {
			t.Errorf("hello after reconnect: %+v", hello)
		}
		again.waitFor("marker-42", 10*time.Second)
		again.send("stty size\r")
		deadline := time.Now().Add(10 * time.Second)
		for strings.Count(again.buf.String(), "30 100\r\n") < 2 && time.Now().Before(deadline) {
			again.waitFor("30 100", time.Second)
			select {
			case b := <-again.out:
				again.buf.Write(b)
			case <-time.After(200 * time.Millisecond):
			}
		}
		if n := strings.Count(again.buf.String(), "30 100\r\n"); n != 2 {
			t.Errorf("after reconnecting, stty size printed 30 100 %d times (replayed once, then again), want 2:\n%s", n, again.buf.String())
		}
		again.conn.Close()

		// Only the owner may attach, and only from this site.
		if _, res, err := bob.terminal(t, sess.ID, "node01", e.url); err == nil || res == nil || res.StatusCode != 404 {
			t.Errorf("another user's attach: %v %v", err, res)
		}
		if _, res, err := ada.terminal(t, sess.ID, "node01", "https://evil.example"); err == nil || res == nil || res.StatusCode != 403 {
			t.Errorf("cross-origin attach: %v %v", err, res)
		}
		if _, res, err := ada.terminal(t, sess.ID, "node09", e.url); err == nil || res == nil || res.StatusCode != 404 {
			t.Errorf("attach to an unknown node: %v %v", err, res)
		}
	})

	t.Run("check, hints and skip", func(t *testing.T) {
		var a attemptView
		ada.do("POST", "/api/sessions/"+sess.ID+"/steps/stop-scheduler/check", map[string]string{}).json(t, &a)
		if a.Passed || len(a.Results) != 2 || a.Results[0].Passed || a.Results[0].Observed != "kube-scheduler.yaml is still in /etc/kubernetes/manifests" || a.Results[0].Feedback["en"] == "" {
			t.Errorf("first check: %+v", a)
		}
		first := a.Results[0].Feedback["en"]
		ada.do("POST", "/api/sessions/"+sess.ID+"/steps/stop-scheduler/check", nil).json(t, &a)
		if a.Results[0].Feedback["en"] == first {
			t.Errorf("the second failure shows the same hint: %q", first)
		}
		if r := ada.do("POST", "/api/sessions/"+sess.ID+"/steps/no-such-step/check", nil); r.status != 404 {
			t.Errorf("unknown step: %d %s", r.status, r.body)
		}
		if r := ada.do("POST", "/api/sessions/"+sess.ID+"/steps/stop-scheduler/check", `{"answer": 5}`); r.status != 400 {
			t.Errorf("answer of the wrong type: %d %s", r.status, r.body)
		}
		ada.do("POST", "/api/sessions/"+sess.ID+"/steps/stop-scheduler/solve", nil).json(t, &a)
		if !a.Passed || a.Kind != "skip" {
			t.Errorf("skip: %+v", a)
		}
		ada.do("GET", "/api/sessions/"+sess.ID, nil).json(t, &sess)
		if sess.Steps[0].Status != "skipped" || sess.Steps[0].Attempts != 3 || sess.Steps[1].Status != "pending" {
			t.Errorf("steps after the skip: %+v", sess.Steps)
		}
	})

	t.Run("idle cluster hibernates and wakes", func(t *testing.T) {
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			ada.do("GET", "/api/sessions/"+sess.ID, nil).json(t, &sess)
			if sess.Sandbox.State == "hibernated" {
				break
			}
			time.Sleep(3 * time.Second)
		}
		if sess.Sandbox.State != "hibernated" {
			t.Fatalf("cluster is %s 2 min after the last activity, want hibernated", sess.Sandbox.State)
		}
		state, _ := dockercli.Output(context.Background(), "inspect", "-f", "{{.State.Status}}", sess.Sandbox.Nodes[0].Container)
		if state != "paused" {
			t.Errorf("control-plane container is %q while hibernated", state)
		}
		var a attemptView
		r := ada.do("POST", "/api/sessions/"+sess.ID+"/steps/apply/check", nil)
		r.json(t, &a)
		if r.status != 200 || len(a.Results) == 0 {
			t.Fatalf("check on a hibernated cluster: %d %s", r.status, r.body)
		}
		ada.do("GET", "/api/sessions/"+sess.ID, nil).json(t, &sess)
		if sess.Sandbox.State != "ready" {
			t.Errorf("after a check the cluster is %s", sess.Sandbox.State)
		}
	})

	t.Run("progress, cluster and shells survive a restart and a killed server", func(t *testing.T) {
		e.stop()
		// A podpath serve process, killed with SIGKILL while a command runs:
		// the shell lives in the node (tmux), so the command goes on, and the
		// next server reattaches to it with the screen redrawn.
		p := serveProcess(t, cfg)
		ada.base = p.url
		ada.do("GET", "/api/sessions/"+sess.ID, nil).json(t, &sess)
		if sess.Sandbox.State != "ready" || sess.Steps[0].Status != "skipped" {
			t.Fatalf("after restart: %+v %+v", sess.Sandbox.State, sess.Steps)
		}
		tm, _, err := ada.terminal(t, sess.ID, "controlplane", p.url)
		if err != nil {
			t.Fatal(err)
		}
		tm.waitFor("root@controlplane:~# ", 90*time.Second)
		tm.send("export X=41; sleep 20; echo sl''ept-$((X*0+7))\r")
		// Killed once the command runs in the shell, not after a guess.
		for wait := 0; ; wait++ {
			var out strings.Builder
			mgr.Exec(context.Background(), sess.Sandbox.Name, "controlplane", []string{"tmux", "-L", "podpath", "display-message", "-p", "-t", "main", "#{pane_current_command}"}, nil, &out, nil)
			if strings.TrimSpace(out.String()) == "sleep" {
				break
			}
			if wait == 300 {
				t.Fatalf("the command does not run in the shell: %q", out.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		p.kill()
		tm.conn.Close()

		e2 := startServer(t, cfg, session.Manager(mgr))
		ada.base = e2.url
		// e2 is ready at once (it serves pages), but the killed server
		// holds the engine lease until it expires (PODPATH_LEASE_TTL):
		// until e2 leads, attaching (which wakes the cluster through the
		// leader) answers 503, and the page's terminal tries again.
		for start := time.Now(); ; {
			var res *http.Response
			tm, res, err = ada.terminal(t, sess.ID, "controlplane", e2.url)
			if err == nil {
				break
			}
			if res == nil || res.StatusCode != http.StatusServiceUnavailable || time.Since(start) > 30*time.Second {
				t.Fatalf("attach after the kill, %s later: %v %v", time.Since(start).Round(time.Second), err, res)
			}
			time.Sleep(time.Second)
		}
		tm.waitFor("slept-7", 60*time.Second) // printed after the kill
		tm.send("echo X$((X+1))X\r")
		tm.waitFor("X42X", 10*time.Second)
		tm.send("kubectl get nodes -o name\r")
		tm.waitFor("node/node01", 90*time.Second)
		tm.conn.Close()
		var ext sessionView
		r := ada.do("POST", "/api/sessions/"+sess.ID+"/extend", nil)
		r.json(t, &ext)
		if r.status != 200 || !ext.ExpiresAt.After(sess.ExpiresAt) {
			t.Errorf("extend: %d, expiry %s -> %s", r.status, sess.ExpiresAt, ext.ExpiresAt)
		}
		e2.stop()

		// A server with a short idle timeout ends the forgotten session
		// and deletes its cluster.
		short := cfg
		short.IdleTimeout, short.HibernateAfter = 20*time.Second, 10*time.Second
		e3 := startServer(t, short, session.Manager(mgr))
		ada.base = e3.url
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			ada.do("GET", "/api/sessions/"+sess.ID, nil).json(t, &sess)
			if sess.State == "ended" && sess.Sandbox.State == "deleted" {
				break
			}
			time.Sleep(3 * time.Second)
		}
		if sess.State != "ended" || sess.EndReason == nil || *sess.EndReason != "idle" || sess.Sandbox.State != "deleted" {
			t.Fatalf("idle session: %s %v, cluster %s", sess.State, sess.EndReason, sess.Sandbox.State)
		}
		if _, err := mgr.Get(context.Background(), sess.Sandbox.Name); err == nil {
			t.Error("the ended session's cluster still exists")
		}
		if r := ada.do("POST", "/api/sessions/"+sess.ID+"/steps/apply/check", nil); r.status != 410 {
			t.Errorf("check on an ended session: %d %s", r.status, r.body)
		}
	})
}
