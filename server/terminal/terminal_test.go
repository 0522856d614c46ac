package terminal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// server runs the bridge over a real bash under a real pty, one shell shared
// by every websocket, as a lab session's node terminal is.
func server(t *testing.T, limits Limits) (*httptest.Server, *Shell) {
	r := newRig(t, limits)
	return r.srv, r.sh
}

// rig is a server whose websockets are the learner's (no query) or
// watchers' (?mode=watch or ?mode=control), these ended by closing stop.
type rig struct {
	srv  *httptest.Server
	sh   *Shell
	stop chan struct{}
	// input counts the calls of OnInput, the learner's and watchers'.
	input atomic.Int64
	// fg tells the learner's runs what is in the foreground; nil: nothing can.
	fg Foreground
	// tmux and sock reach the keeper of a keeperRig (run_test.go).
	tmux, sock string
}

func newRig(t *testing.T, limits Limits) *rig {
	t.Helper()
	// Bash's prompt and line editing go to its stderr, which Start keeps
	// off the pty; 2>&1 puts them on the screen, as a node's shell has
	// them, so a watcher can be shown the learner's keys.
	cmd := exec.Command("sh", "-c", "exec bash --norc --noprofile -i 2>&1")
	cmd.Env = []string{"PS1=$ ", "TERM=xterm", "PATH=/usr/bin:/bin"}
	return newRigWith(t, limits, cmd, nil)
}

// newRigWith serves the shell cmd starts; fg is the learner's Foreground.
func newRigWith(t *testing.T, limits Limits, cmd *exec.Cmd, fg Foreground) *rig {
	t.Helper()
	sh, err := Start(cmd, 80, 24)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sh.Close)
	rg := &rig{sh: sh, stop: make(chan struct{}), fg: fg}
	up := websocket.Upgrader{}
	rg.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		onInput := func() { rg.input.Add(1) }
		switch mode := r.URL.Query().Get("mode"); mode {
		case "":
			Serve(conn, sh, "node01", limits, ClientOptions{Foreground: rg.fg})
		default:
			ServeWatch(conn, sh, "node01", limits, WatchOptions{Control: mode == "control", OnInput: onInput, Stop: rg.stop})
		}
	}))
	t.Cleanup(rg.srv.Close)
	return rg
}

type client struct {
	t    *testing.T
	conn *websocket.Conn
	mu   sync.Mutex
	out  bytes.Buffer
	ctrl []Control
	done chan struct{}
	err  error
}

func dial(t *testing.T, srv *httptest.Server) *client {
	t.Helper()
	return dialMode(t, srv, "")
}

// dialMode opens a watcher's websocket ("watch" or "control"), or the
// learner's ("").
func dialMode(t *testing.T, srv *httptest.Server, mode string) *client {
	t.Helper()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	if mode != "" {
		url += "?mode=" + mode
	}
	conn, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &client{t: t, conn: conn, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			kind, data, err := conn.ReadMessage()
			c.mu.Lock()
			if err != nil {
				c.err = err
				c.mu.Unlock()
				return
			}
			if kind == websocket.BinaryMessage {
				c.out.Write(data)
			} else {
				var ctl Control
				json.Unmarshal(data, &ctl)
				c.ctrl = append(c.ctrl, ctl)
			}
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() { conn.Close() })
	return c
}

func (c *client) send(s string) {
	c.t.Helper()
	if err := c.conn.WriteMessage(websocket.BinaryMessage, []byte(s)); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) control(v Control) {
	c.t.Helper()
	b, _ := json.Marshal(v)
	if err := c.conn.WriteMessage(websocket.TextMessage, b); err != nil {
		c.t.Fatal(err)
	}
}

// waitFor waits until the output contains want.
func (c *client) waitFor(want string) string {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		out := c.out.String()
		c.mu.Unlock()
		if strings.Contains(out, want) {
			return out
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t.Fatalf("no %q in the terminal output:\n%s", want, c.out.String())
	return ""
}

// output is what the client was sent so far.
func (c *client) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// controls are the control messages the client was sent so far.
func (c *client) controls() []Control {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Control(nil), c.ctrl...)
}

// hello waits for the first control message and returns it.
func (c *client) hello() Control {
	c.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if ctl := c.controls(); len(ctl) > 0 {
			return ctl[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatal("no hello")
	return Control{}
}

// sync sends a ping and waits for its pong: the server has read every frame
// sent before it, and queued every answer to them.
func (c *client) sync() {
	c.t.Helper()
	pongs := func() int {
		n := 0
		for _, ct := range c.controls() {
			if ct.Type == "pong" {
				n++
			}
		}
		return n
	}
	before := pongs()
	c.control(Control{Type: "ping"})
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if pongs() > before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatal("no pong")
}

// closed waits for the server to close the socket and returns how.
func (c *client) closed() *websocket.CloseError {
	c.t.Helper()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.t.Fatal("the socket was not closed")
	}
	var ce *websocket.CloseError
	if !asClose(c.err, &ce) {
		c.t.Fatalf("socket ended with %v, not a close frame", c.err)
	}
	return ce
}

func TestTypeAndRead(t *testing.T) {
	srv, _ := server(t, DefaultLimits)
	c := dial(t, srv)
	c.send("echo $((6*7))\r")
	out := c.waitFor("42\r\n")
	if strings.Count(out, "42") < 1 {
		t.Fatalf("output: %q", out)
	}
	c.mu.Lock()
	if len(c.ctrl) == 0 || c.ctrl[0].Type != "hello" || c.ctrl[0].Node != "node01" || c.ctrl[0].Mode != "" {
		t.Errorf("first control message %+v, want hello for node01 with no mode", c.ctrl)
	}
	c.mu.Unlock()
}

func TestResize(t *testing.T) {
	srv, _ := server(t, DefaultLimits)
	c := dial(t, srv)
	c.send("stty size\r")
	c.waitFor("24 80")
	c.control(Control{Type: "resize", Cols: 132, Rows: 40})
	time.Sleep(100 * time.Millisecond)
	c.send("stty size\r")
	c.waitFor("40 132")
	c.control(Control{Type: "resize", Cols: 0, Rows: 0})
	c.control(Control{Type: "ping"})
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		var types []string
		for _, ct := range c.ctrl {
			types = append(types, ct.Type)
		}
		c.mu.Unlock()
		if strings.Contains(strings.Join(types, ","), "error,pong") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("a bad resize should answer error and a ping pong; got %+v", c.ctrl)
}

// A reconnecting client gets what it missed, once, and the shell is the same.
func TestReconnectReplaysOnce(t *testing.T) {
	srv, _ := server(t, DefaultLimits)
	c := dial(t, srv)
	c.send("export MARK=before-reload; echo $MARK-seen\r")
	c.waitFor("before-reload-seen")
	c.conn.Close()
	<-c.done

	c2 := dial(t, srv)
	out := c2.waitFor("before-reload-seen")
	c2.mu.Lock()
	hello := c2.ctrl[0]
	c2.mu.Unlock()
	if hello.Type != "hello" || hello.Replayed == 0 {
		t.Errorf("hello %+v should announce the replayed bytes", hello)
	}
	c2.send("echo still-$MARK\r")
	c2.waitFor("still-before-reload")
	if n := strings.Count(c2.waitFor("still-before-reload"), "before-reload-seen"); n != 1 {
		t.Errorf("the output before the reload appears %d times after it, want once: %q", n, out)
	}
}

// Opening the same terminal elsewhere takes it over; the first client is
// told why it was closed.
func TestSecondClientReplacesFirst(t *testing.T) {
	srv, _ := server(t, DefaultLimits)
	c1 := dial(t, srv)
	c1.send("echo one\r")
	c1.waitFor("one")
	dial(t, srv)
	select {
	case <-c1.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the first client was not closed")
	}
	var ce *websocket.CloseError
	if !asClose(c1.err, &ce) || ce.Code != CloseReplaced {
		t.Errorf("first client closed with %v, want code %d", c1.err, CloseReplaced)
	}
}

func TestShellExitClosesWithReason(t *testing.T) {
	srv, _ := server(t, DefaultLimits)
	c := dial(t, srv)
	c.send("exit 3\r")
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		t.Fatal("socket not closed after the shell exited")
	}
	var ce *websocket.CloseError
	if !asClose(c.err, &ce) || ce.Code != CloseShellExited || !strings.Contains(ce.Text, "exited with code 3") {
		t.Errorf("close %v, want %d with the exit code", c.err, CloseShellExited)
	}
	found := false
	for _, ct := range c.ctrl {
		if ct.Type == "exit" && ct.Code != nil && *ct.Code == 3 {
			found = true
		}
	}
	if !found {
		t.Errorf("no exit message with code 3: %+v", c.ctrl)
	}
}

func TestLimits(t *testing.T) {
	t.Run("message too big", func(t *testing.T) {
		srv, _ := server(t, Limits{MaxMessage: 1024, MessagesPerSecond: 100, Burst: 100})
		c := dial(t, srv)
		c.send(strings.Repeat("x", 4096))
		<-c.done
		var ce *websocket.CloseError
		if !asClose(c.err, &ce) || ce.Code != websocket.CloseMessageTooBig {
			t.Errorf("close %v, want 1009", c.err)
		}
	})
	t.Run("flood", func(t *testing.T) {
		srv, _ := server(t, Limits{MaxMessage: 1024, MessagesPerSecond: 50, Burst: 50})
		c := dial(t, srv)
		for i := 0; i < 500; i++ {
			if c.conn.WriteMessage(websocket.BinaryMessage, []byte("a")) != nil {
				break
			}
		}
		select {
		case <-c.done:
		case <-time.After(5 * time.Second):
			t.Fatal("a flood of 500 frames did not close the socket")
		}
		var ce *websocket.CloseError
		if !asClose(c.err, &ce) || ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "too many") {
			t.Errorf("close %v, want 1008 too many messages", c.err)
		}
	})
}

func asClose(err error, target **websocket.CloseError) bool {
	ce, ok := err.(*websocket.CloseError)
	if ok {
		*target = ce
	}
	return ok
}

// A watcher is sent what happened before it came (the replay) and then what
// the learner types and its output, as it happens.
func TestWatcherSeesClientLiveAndReplay(t *testing.T) {
	rg := newRig(t, DefaultLimits)
	c := dial(t, rg.srv)
	c.send("echo BEFORE-$((2*3))\r")
	c.waitFor("BEFORE-6")

	w := dialMode(t, rg.srv, "watch")
	if h := w.hello(); h.Type != "hello" || h.Mode != "watch" || h.Node != "node01" || h.Replayed == 0 {
		t.Errorf("watcher's hello %+v, want mode watch on node01 with a replay", h)
	}
	w.waitFor("BEFORE-6")

	c.send("echo LIVE-$((6*7))\r")
	w.waitFor("echo LIVE-$((6*7))") // the keys, as the shell echoes them
	w.waitFor("LIVE-42")            // and their output
}

// A watcher's keys never reach the shell; it is told so once, not for each
// key; its resizes leave the learner's pty alone.
func TestWatcherIsReadOnly(t *testing.T) {
	rg := newRig(t, DefaultLimits)
	c := dial(t, rg.srv)
	c.hello()
	w := dialMode(t, rg.srv, "watch")
	w.hello()
	for i := 0; i < 3; i++ {
		w.send("echo WATCHERMARK\r")
	}
	w.control(Control{Type: "resize", Cols: 132, Rows: 40})
	w.sync() // the server has read and refused all of the above

	var readOnly int
	for _, ct := range w.controls() {
		if ct.Type == "error" {
			if ct.Message != readOnlyMessage {
				t.Errorf("watcher got error %q, want only %q", ct.Message, readOnlyMessage)
			}
			readOnly++
		}
	}
	if readOnly != 1 {
		t.Errorf("3 input frames from a watcher got %d read-only errors, want 1", readOnly)
	}

	c.send("stty size; echo CLIENT-$((1+1))\r")
	c.waitFor("CLIENT-2")
	time.Sleep(500 * time.Millisecond) // room for the refused keys to show up, if they got through
	if out := c.output(); strings.Contains(out, "WATCHERMARK") {
		t.Errorf("a watcher's keys reached the shell; the learner's terminal shows:\n%s", out)
	}
	if out := c.output(); !strings.Contains(out, "24 80") {
		t.Errorf("a watcher's resize changed the learner's pty (want 24 80):\n%s", out)
	}
	if strings.Contains(w.output(), "WATCHERMARK") {
		t.Errorf("the watcher's own screen shows its refused keys:\n%s", w.output())
	}
	w.waitFor("CLIENT-2") // still watching after all that
	if n := rg.input.Load(); n != 0 {
		t.Errorf("OnInput called %d times for a watcher's refused keys, want 0", n)
	}
}

// A controller types into the learner's shell as the learner does, but does
// not resize it.
func TestControllerTypes(t *testing.T) {
	rg := newRig(t, DefaultLimits)
	c := dial(t, rg.srv)
	c.hello()
	ctl := dialMode(t, rg.srv, "control")
	if h := ctl.hello(); h.Mode != "control" {
		t.Errorf("controller's hello %+v, want mode control", h)
	}
	ctl.control(Control{Type: "resize", Cols: 132, Rows: 40})
	ctl.send("stty size; echo CTRL-$((6*7))\r")
	c.waitFor("CTRL-42")
	ctl.waitFor("CTRL-42")
	if out := c.output(); !strings.Contains(out, "24 80") {
		t.Errorf("a controller's resize changed the learner's pty (want 24 80):\n%s", out)
	}
	for _, ct := range ctl.controls() {
		if ct.Type == "error" {
			t.Errorf("controller got error %q", ct.Message)
		}
	}
	if rg.input.Load() == 0 {
		t.Error("OnInput not called for a controller's keys")
	}
}

// The learner reloading (a new Attach replaces the old client) or leaving
// does not drop a watcher.
func TestAttachKeepsWatchers(t *testing.T) {
	rg := newRig(t, DefaultLimits)
	w := dialMode(t, rg.srv, "watch")
	w.hello()
	c1 := dial(t, rg.srv)
	c1.send("echo ONE-$((0+1))\r")
	w.waitFor("ONE-1")
	c2 := dial(t, rg.srv)
	if ce := c1.closed(); ce.Code != CloseReplaced {
		t.Fatalf("first client closed with %d, want %d", ce.Code, CloseReplaced)
	}
	c2.send("echo TWO-$((1+1))\r")
	w.waitFor("TWO-2")
	c2.conn.Close()
	<-c2.done

	rg.sh.Write([]byte("echo ALONE-$((3+3))\r")) // nobody attached now
	w.waitFor("ALONE-6")
	select {
	case <-w.done:
		t.Fatalf("the watcher was closed: %v", w.err)
	default:
	}
}

// Closing Stop ends watchers with 4002 and leaves the learner be.
func TestStopEndsTakeover(t *testing.T) {
	rg := newRig(t, DefaultLimits)
	c := dial(t, rg.srv)
	c.hello()
	ctl := dialMode(t, rg.srv, "control")
	ctl.hello()
	w := dialMode(t, rg.srv, "watch")
	w.hello()
	close(rg.stop)
	if ce := ctl.closed(); ce.Code != CloseTakeoverEnded || ce.Text != "the take-over ended" {
		t.Errorf("controller closed with %d %q, want %d \"the take-over ended\"", ce.Code, ce.Text, CloseTakeoverEnded)
	}
	if ce := w.closed(); ce.Code != CloseTakeoverEnded || ce.Text != "watching ended" {
		t.Errorf("watcher closed with %d %q, want %d \"watching ended\"", ce.Code, ce.Text, CloseTakeoverEnded)
	}
	c.send("echo STILL-$((2+2))\r")
	c.waitFor("STILL-4")
}

// A watcher that does not read is dropped; the learner's output never waits
// for it.
func TestSlowWatcherDropped(t *testing.T) {
	rg := newRig(t, DefaultLimits)
	c := dial(t, rg.srv)
	_, out, detach := rg.sh.Watch() // never read until the end
	defer detach()
	// One seq is some 600 pty reads here; a kernel with larger reads may
	// need more than one to fill the watcher's queue.
	for i := 0; i < 5 && len(out) < cap(out); i++ {
		// The shell computes the mark, so the echo of the command line
		// does not match it.
		c.send(fmt.Sprintf("seq 1 200000; echo END-$((%d+1))\r", i))
		c.waitFor(fmt.Sprintf("END-%d\r\n", i+1)) // the learner got all of it
	}
	if len(out) < cap(out) {
		t.Fatalf("5 runs of seq filled %d of the watcher's %d places", len(out), cap(out))
	}
	c.send("echo AFTER-$((4+4))\r")
	c.waitFor("AFTER-8")

	got := 0
	timeout := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-out:
			if !ok {
				if got > cap(out) {
					t.Errorf("the dropped watcher got %d chunks, more than its queue of %d", got, cap(out))
				}
				return
			}
			got++
		case <-timeout:
			t.Fatalf("a watcher that fell behind was not dropped (read %d chunks and it stays open)", got)
		}
	}
}

// The shell exiting closes watchers as it does the client: 4000, the exit
// code, and Done closed before their output.
func TestShellExitClosesWatchers(t *testing.T) {
	rg := newRig(t, DefaultLimits)
	c := dial(t, rg.srv)
	c.hello()
	w := dialMode(t, rg.srv, "watch")
	w.hello()
	_, out, detach := rg.sh.Watch()
	defer detach()
	c.send("exit 3\r")
	timeout := time.After(10 * time.Second)
drain:
	for {
		select {
		case _, ok := <-out:
			if !ok {
				break drain
			}
		case <-timeout:
			t.Fatal("a watcher's output stays open after the shell exited")
		}
	}
	select {
	case <-rg.sh.Done():
	default:
		t.Error("a watcher's output closed before Done")
	}
	if ce := w.closed(); ce.Code != CloseShellExited || !strings.Contains(ce.Text, "exited with code 3") {
		t.Errorf("watcher closed with %d %q, want %d with the exit code", ce.Code, ce.Text, CloseShellExited)
	}
	replay, late, _ := rg.sh.Watch()
	if _, ok := <-late; ok {
		t.Error("watching an exited shell gave an open channel")
	}
	if !strings.Contains(string(replay), "exit 3") {
		t.Errorf("watching an exited shell replays %q, want its last output", replay)
	}
}

// A watcher is told the learner's terminal size in its hello, so that it
// draws the screen as the learner sees it (a full-screen program, a long
// line); the learner's own hello carries none.
func TestWatcherToldTheLearnersSize(t *testing.T) {
	rg := newRig(t, DefaultLimits)
	c := dial(t, rg.srv)
	if h := c.hello(); h.Cols != 0 || h.Rows != 0 {
		t.Errorf("the learner's hello carries a size: %+v", h)
	}
	c.control(Control{Type: "resize", Cols: 101, Rows: 31})
	c.send("stty size\r")
	c.waitFor("31 101")
	w := dialMode(t, rg.srv, "watch")
	if h := w.hello(); h.Cols != 101 || h.Rows != 31 {
		t.Fatalf("the watcher's hello %+v, want the learner's 101x31", h)
	}
}
