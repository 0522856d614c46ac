package terminal

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// server runs the bridge over a real bash under a real pty, one shell shared
// by every websocket, as a lab session's node terminal is.
func server(t *testing.T, limits Limits) (*httptest.Server, *Shell) {
	t.Helper()
	cmd := exec.Command("bash", "--norc", "--noprofile", "-i")
	cmd.Env = []string{"PS1=$ ", "TERM=xterm", "PATH=/usr/bin:/bin"}
	sh, err := Start(cmd, 80, 24)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sh.Close)
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		Serve(conn, sh, "node01", limits, nil)
	}))
	t.Cleanup(srv.Close)
	return srv, sh
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
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
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

func TestTypeAndRead(t *testing.T) {
	srv, _ := server(t, DefaultLimits)
	c := dial(t, srv)
	c.send("echo $((6*7))\r")
	out := c.waitFor("42\r\n")
	if strings.Count(out, "42") < 1 {
		t.Fatalf("output: %q", out)
	}
	c.mu.Lock()
	if len(c.ctrl) == 0 || c.ctrl[0].Type != "hello" || c.ctrl[0].Node != "node01" {
		t.Errorf("first control message %+v, want hello for node01", c.ctrl)
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
