package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/podpath/podpath/grader"
	"github.com/podpath/podpath/internal/dockercli"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/server/terminal"
)

// ServerOptions tune `podpath bench server`.
type ServerOptions struct {
	Out io.Writer
	// Terminals is the larger number of concurrent terminals.
	Terminals int
	// Keystrokes per terminal.
	Keystrokes int
	// Checks is how many times each check is judged.
	Checks int
	// Keep leaves the bench cluster running.
	Keep bool
}

const benchCluster = "bench-server"

// Server measures the terminal path (websocket, the pty bridge, docker exec,
// bash in a real node) and check latency on a real cluster.
func Server(ctx context.Context, o ServerOptions) error {
	if o.Terminals == 0 {
		o.Terminals = 50
	}
	if o.Keystrokes == 0 {
		o.Keystrokes = 100
	}
	if o.Checks == 0 {
		o.Checks = 50
	}
	out := o.Out
	fmt.Fprintf(out, "machine: %s\n", Machine())
	m := sandbox.NewManager()
	if _, err := m.Get(ctx, benchCluster); err != nil {
		fmt.Fprintf(out, "creating a 2-node cluster %s...\n", benchCluster)
		if _, err := m.Create(ctx, sandbox.Spec{Name: benchCluster, Workers: 1}, nil); err != nil {
			return err
		}
	}
	if !o.Keep {
		defer m.Delete(context.WithoutCancel(ctx), benchCluster)
	}
	target := m.Target(benchCluster)

	// Each websocket gets its own shell on node01, through the same bridge
	// the server uses.
	var seq atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The learner's path: a terminal through the Engine API onto a
		// tmux-kept shell, one tmux session per websocket (as each learner
		// has their own).
		cmd := []string{"bash", "-l"}
		if r.URL.Query().Get("keeper") != "" {
			cmd = sandbox.KeeperCommand(fmt.Sprintf("bench%d", seq.Add(1)))
		}
		tty, err := target.Terminal(r.Context(), "node01", cmd, 200, 50)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		sh := terminal.New(tty)
		defer sh.Close()
		conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		terminal.Serve(conn, sh, "node01", terminal.Limits{MaxMessage: 1 << 20, MessagesPerSecond: 10000, Burst: 10000}, terminal.ClientOptions{})
	}))
	defer srv.Close()
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http")

	// The bridge and the Engine API alone (a plain bash per terminal), then
	// the learner's real path: each shell kept by tmux in the node.
	for _, mode := range []struct{ name, query string }{{"plain bash", ""}, {"tmux-kept shell (the learner's path)", "?keeper=1"}} {
		for _, n := range []int{1, o.Terminals} {
			rtts, err := keystrokes(ctx, wsURL+mode.query, n, o.Keystrokes)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "keystroke echo round trip, %s, %d terminal(s), %d keystrokes: p50 %s, p99 %s\n",
				mode.name, n, len(rtts), percentile(rtts, 50).Round(10*time.Microsecond), percentile(rtts, 99).Round(10*time.Microsecond))
		}
		rate, wire, secs, err := throughput(ctx, wsURL+mode.query)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "terminal output, %s: cat of a 100 MB file done in %.1f s (%.1f MB/s); %.1f MB reached the browser\n",
			mode.name, secs, rate, float64(wire)/1e6)
	}

	if err := execFloors(ctx, out, m, o.Checks); err != nil {
		return err
	}

	lab := &labs.Lab{ID: "bench", Cluster: labs.Cluster{Workers: 1}, Files: func(string) ([]byte, error) { return nil, io.EOF }}
	g := grader.New(target, lab)
	for _, c := range []struct {
		name  string
		check labs.Check
	}{
		{"API-level (kube probe: pods in kube-system)", labs.Check{
			Probe:  labs.Probe{Kube: &labs.KubeProbe{Resource: "pods", Namespace: "kube-system", JSONPath: "{.items[*].metadata.name}"}},
			Expect: labs.Matcher{Count: &labs.Matcher{GE: ptr(1.0)}}}},
		{"node-level (command probe on node01)", labs.Check{
			Probe:  labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "systemctl is-active kubelet"}},
			Expect: labs.Matcher{Equals: ptr("active")}}},
	} {
		step := &labs.Step{Checks: []labs.Check{c.check}}
		var ds []time.Duration
		for i := 0; i < o.Checks+2; i++ {
			res := g.CheckStep(ctx, step, grader.Options{NoWait: true})
			if !res[0].Passed {
				return fmt.Errorf("bench check %s failed: %s", c.name, res[0].Observed)
			}
			if i >= 2 { // the first readings warm up clients and caches
				ds = append(ds, res[0].Duration)
			}
		}
		fmt.Fprintf(out, "check latency, %s, %d checks: p50 %s, p95 %s\n", c.name, len(ds),
			percentile(ds, 50).Round(100*time.Microsecond), percentile(ds, 95).Round(100*time.Microsecond))
	}
	// A Check press on a step with four node-level checks (they run in
	// turn, as the grader judges a step).
	four := &labs.Step{}
	for _, run := range []string{"systemctl is-active kubelet", "test -d /var/lib/kubelet && echo yes", "crictl --version >/dev/null && echo yes", "hostname"} {
		four.Checks = append(four.Checks, labs.Check{Probe: labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: run}}, Expect: labs.Matcher{NonEmpty: true}})
	}
	var ds []time.Duration
	for i := 0; i < o.Checks+2; i++ {
		start := time.Now()
		res := g.CheckStep(ctx, four, grader.Options{NoWait: true})
		if !grader.Passed(res) {
			return fmt.Errorf("bench step of four checks failed: %+v", res)
		}
		if i >= 2 {
			ds = append(ds, time.Since(start))
		}
	}
	fmt.Fprintf(out, "Check of a step with four node-level checks, %d presses: p50 %s, p95 %s\n", len(ds),
		percentile(ds, 50).Round(100*time.Microsecond), percentile(ds, 95).Round(100*time.Microsecond))
	return nil
}

func ptr[T any](v T) *T { return &v }

// keystrokes opens n terminals at once; each types k characters at human
// speed (about 10 a second) and times each character's echo.
func keystrokes(ctx context.Context, url string, n, k int) ([]time.Duration, error) {
	var mu sync.Mutex
	var all []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := typeInto(ctx, url, k)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			all = append(all, d...)
		}()
	}
	wg.Wait()
	return all, firstErr
}

func typeInto(ctx context.Context, url string, k int) ([]time.Duration, error) {
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	data := make(chan []byte, 256)
	go func() {
		defer close(data)
		for {
			kind, b, err := conn.ReadMessage()
			if err != nil {
				return
			}
			if kind == websocket.BinaryMessage {
				data <- b
			}
		}
	}()
	wait := func(want string, timeout time.Duration) error {
		var buf bytes.Buffer
		deadline := time.After(timeout)
		for !strings.Contains(buf.String(), want) {
			select {
			case b, ok := <-data:
				if !ok {
					return fmt.Errorf("terminal closed while waiting for %q", want)
				}
				buf.Write(b)
			case <-deadline:
				return fmt.Errorf("no %q within %s", want, timeout)
			}
		}
		return nil
	}
	// Wait for the shell, and turn off bracketed paste and the prompt so
	// each keystroke echoes exactly itself.
	conn.WriteMessage(websocket.BinaryMessage, []byte("bind 'set enable-bracketed-paste off'; PS1=; PROMPT_COMMAND=; echo READY-$((1+1))\r"))
	if err := wait("READY-2", 60*time.Second); err != nil {
		return nil, err
	}
	time.Sleep(200 * time.Millisecond)
	for len(data) > 0 {
		<-data
	}
	var rtts []time.Duration
	for i := 0; i < k; i++ {
		c := byte('a' + i%26)
		start := time.Now()
		conn.WriteMessage(websocket.BinaryMessage, []byte{c})
		if err := wait(string(c), 10*time.Second); err != nil {
			return rtts, err
		}
		rtts = append(rtts, time.Since(start))
		if i%40 == 39 {
			conn.WriteMessage(websocket.BinaryMessage, []byte{0x15}) // Ctrl-U clears the line
			time.Sleep(50 * time.Millisecond)
			for len(data) > 0 {
				<-data
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return rtts, nil
}

// throughput cats a large file through a terminal and measures MB/s.
// throughput cats a 100 MB file in the terminal and returns the file's
// rate (MB/s until the prompt is back), the bytes that reached the client
// (tmux sends the screen, not every byte) and the seconds.
func throughput(ctx context.Context, url string) (float64, int64, float64, error) {
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, url, nil)
	if err != nil {
		return 0, 0, 0, err
	}
	defer conn.Close()
	const size = 100 << 20
	conn.WriteMessage(websocket.BinaryMessage, []byte(fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x | fold -w 120 > /tmp/big; echo MADE-$((2+2))\r", size)))
	if err := readUntil(conn, "MADE-4", 120*time.Second, nil); err != nil {
		return 0, 0, 0, err
	}
	var n int64
	start := time.Now()
	conn.WriteMessage(websocket.BinaryMessage, []byte("cat /tmp/big; echo DONE-$((3+3))\r"))
	if err := readUntil(conn, "DONE-6", 10*time.Minute, &n); err != nil {
		return 0, 0, 0, err
	}
	secs := time.Since(start).Seconds()
	return float64(size) / 1e6 / secs, n, secs, nil
}

func readUntil(conn *websocket.Conn, marker string, timeout time.Duration, count *int64) error {
	conn.SetReadDeadline(time.Now().Add(timeout))
	defer conn.SetReadDeadline(time.Time{})
	var tail []byte
	for {
		kind, b, err := conn.ReadMessage()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", marker, err)
		}
		if kind != websocket.BinaryMessage {
			continue
		}
		if count != nil {
			*count += int64(len(b))
		}
		tail = append(tail, b...)
		if bytes.Contains(tail, []byte(marker)) {
			return nil
		}
		if len(tail) > 64 {
			tail = tail[len(tail)-64:]
		}
	}
}

// execFloors times `true` in node01 three ways, the floor beside the
// check figures: the docker CLI (what checks cost before), the Engine API
// (what they cost now), and nsenter into the node's namespaces (no Docker at
// all, what an exec channel into the node could approach).
func execFloors(ctx context.Context, out io.Writer, m *sandbox.Manager, n int) error {
	info, err := m.Get(ctx, benchCluster)
	if err != nil {
		return err
	}
	node, err := info.Node("node01")
	if err != nil {
		return err
	}
	pid, err := dockercli.Output(ctx, "inspect", "-f", "{{.State.Pid}}", node.Container)
	if err != nil {
		return err
	}
	ways := []struct {
		name string
		run  func() error
	}{
		{"docker exec CLI", func() error { return exec.CommandContext(ctx, dockercli.Binary, "exec", node.Container, "true").Run() }},
		{"Engine API exec", func() error {
			code, err := dockercli.Exec(ctx, node.Container, []string{"true"}, nil, nil, nil)
			if err == nil && code != 0 {
				err = fmt.Errorf("exit %d", code)
			}
			return err
		}},
		{"nsenter into the node", func() error {
			return exec.CommandContext(ctx, "nsenter", "-t", pid, "-m", "-u", "-i", "-n", "-p", "true").Run()
		}},
	}
	for _, w := range ways {
		var ds []time.Duration
		for i := 0; i < n+2; i++ {
			start := time.Now()
			if err := w.run(); err != nil {
				return fmt.Errorf("%s: %w", w.name, err)
			}
			if i >= 2 {
				ds = append(ds, time.Since(start))
			}
		}
		fmt.Fprintf(out, "exec floor, %s (true in node01), %d runs: p50 %s, p95 %s\n", w.name, len(ds),
			percentile(ds, 50).Round(100*time.Microsecond), percentile(ds, 95).Round(100*time.Microsecond))
	}
	return nil
}
