package terminal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/time/rate"
)

// Limits protect the server from a client that sends too much.
type Limits struct {
	// MaxMessage is the largest frame a client may send, in bytes.
	MaxMessage int64
	// MessagesPerSecond and Burst bound how many frames a client may send.
	MessagesPerSecond float64
	Burst             int
}

// DefaultLimits fit typing and pasting; a flood of frames is cut off.
var DefaultLimits = Limits{MaxMessage: 64 * 1024, MessagesPerSecond: 200, Burst: 400}

// Control is a JSON text frame, in either direction.
type Control struct {
	Type string `json:"type"`
	// resize
	Cols uint16 `json:"cols,omitempty"`
	Rows uint16 `json:"rows,omitempty"`
	// hello: bytes of replayed output that follow as binary frames, and
	// the connection's mode: "watch" or "control" for a watcher, empty for
	// the learner's own terminal
	Node     string `json:"node,omitempty"`
	Replayed int    `json:"replayed,omitempty"`
	Mode     string `json:"mode,omitempty"`
	// exit
	Code   *int   `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
	// error
	Message string `json:"message,omitempty"`
	// run: a command to type into the shell, after stopping what runs in
	// its foreground when interrupt is set (Shell.Run)
	Command   string `json:"command,omitempty"`
	Interrupt bool   `json:"interrupt,omitempty"`
}

// Close codes the bridge uses (RFC 6455 and the 4000 range for its own).
const (
	CloseShellExited = 4000 // the shell ended; reattaching starts a new one
	CloseReplaced    = 4001 // the same terminal was opened elsewhere
	// CloseTakeoverEnded closes a watcher whose WatchOptions.Stop closed.
	CloseTakeoverEnded = 4002
)

// readOnlyMessage answers a watcher's keystrokes, at most once every
// readOnlyEvery.
const (
	readOnlyMessage = "this terminal is read-only: you are watching; take over to type"
	readOnlyEvery   = 5 * time.Second
)

const (
	writeWait  = 10 * time.Second
	pingPeriod = 25 * time.Second
	pongWait   = 60 * time.Second
)

// ClientOptions say what the learner's own terminal connects to.
type ClientOptions struct {
	// OnInput is called for each input frame and run (activity tracking);
	// it may be nil.
	OnInput func()
	// Foreground tells Run what runs in the shell's foreground; nil: Run
	// cannot tell (see Shell.Run).
	Foreground Foreground
}

// Serve speaks the terminal protocol on conn until the client goes away,
// the shell exits or another client attaches.
func Serve(conn *websocket.Conn, sh *Shell, node string, limits Limits, opts ClientOptions) error {
	replay, output, replaced, detach := sh.Attach()
	defer detach()
	return serve(conn, sh, node, limits, peer{
		replay: replay, output: output, replaced: replaced,
		input: true, resize: true, run: true, onInput: opts.OnInput, foreground: opts.Foreground,
	})
}

// WatchOptions say what a watcher may do.
type WatchOptions struct {
	// Control lets the watcher type: its input frames go to the shell as
	// the client's do. Without it the terminal is read-only.
	Control bool
	// OnInput is called for each input frame that reaches the shell
	// (activity tracking); it may be nil.
	OnInput func()
	// Stop, once closed, ends the connection with CloseTakeoverEnded; nil
	// never does.
	Stop <-chan struct{}
}

// ServeWatch speaks the terminal protocol on conn for a watcher of sh, beside
// its client, until the watcher goes away, falls behind, Stop closes or the
// shell exits. A watcher never resizes the pty: its resize messages are
// ignored, as its input is unless opts.Control.
func ServeWatch(conn *websocket.Conn, sh *Shell, node string, limits Limits, opts WatchOptions) error {
	replay, output, detach := sh.Watch()
	defer detach()
	p := peer{
		mode: "watch", replay: replay, output: output,
		input: opts.Control, onInput: opts.OnInput,
		stop: opts.Stop, stopReason: "watching ended",
	}
	if opts.Control {
		p.mode, p.stopReason = "control", "the take-over ended"
	}
	return serve(conn, sh, node, limits, p)
}

// peer is one websocket's part in a shell: the client's or a watcher's.
type peer struct {
	mode     string // hello's mode
	replay   []byte
	output   <-chan []byte
	replaced <-chan struct{} // nil: never replaced
	input    bool            // input frames go to the shell
	resize   bool            // resize messages resize the pty
	run      bool            // run messages type commands (the learner's own terminal)
	onInput  func()
	// foreground tells a run what is in the shell's foreground.
	foreground Foreground
	// stop, once closed, ends the connection with CloseTakeoverEnded.
	stop       <-chan struct{}
	stopReason string
}

// serve speaks the terminal protocol on conn for p.
func serve(conn *websocket.Conn, sh *Shell, node string, limits Limits, p peer) error {
	defer conn.Close()
	conn.SetReadLimit(limits.MaxMessage)
	replay, output, replaced, onInput := p.replay, p.output, p.replaced, p.onInput

	// One goroutine writes, as gorilla/websocket requires.
	writes := make(chan func() error, 16)
	writeErr := make(chan error, 1)
	stop, writerDone := make(chan struct{}), make(chan struct{})
	defer close(stop)
	go func() {
		defer close(writerDone)
		ping := time.NewTicker(pingPeriod)
		defer ping.Stop()
		for {
			var err error
			select {
			case <-stop:
				return
			case w := <-writes:
				err = w()
			case <-ping.C:
				conn.SetWriteDeadline(time.Now().Add(writeWait))
				err = conn.WriteMessage(websocket.PingMessage, nil)
			}
			if err != nil {
				writeErr <- err
				return
			}
		}
	}()
	enqueue := func(w func() error) bool {
		select {
		case writes <- w:
			return true
		case <-writerDone:
			return false
		}
	}
	send := func(kind int, data []byte) {
		enqueue(func() error {
			conn.SetWriteDeadline(time.Now().Add(writeWait))
			return conn.WriteMessage(kind, data)
		})
	}
	sendControl := func(c Control) {
		b, _ := json.Marshal(c)
		send(websocket.TextMessage, b)
	}
	closeWith := func(code int, reason string) {
		done := make(chan struct{})
		if !enqueue(func() error {
			defer close(done)
			msg := websocket.FormatCloseMessage(code, reason)
			return conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(writeWait))
		}) {
			return
		}
		select {
		case <-done:
		case <-writerDone:
		case <-time.After(writeWait):
		}
	}

	hello := Control{Type: "hello", Node: node, Replayed: len(replay), Mode: p.mode}
	if p.mode != "" {
		// A watcher draws the screen at the learner's size.
		hello.Cols, hello.Rows = sh.Size()
	}
	sendControl(hello)
	if len(replay) > 0 {
		send(websocket.BinaryMessage, replay)
	}

	// Runs, one after another, end with the connection.
	runCtx, cancelRuns := context.WithCancel(context.Background())
	defer cancelRuns()
	runs := make(chan Control, 16)
	if p.run {
		go func() {
			for {
				select {
				case <-runCtx.Done():
					return
				case c := <-runs:
					if err := sh.Run(runCtx, p.foreground, c.Command, c.Interrupt); err != nil && runCtx.Err() == nil {
						sendControl(Control{Type: "error", Message: "the command could not be typed: " + err.Error()})
					}
				}
			}
		}()
	}

	// Reader: input and control frames from the client.
	readErr := make(chan error, 1)
	go func() {
		limiter := rate.NewLimiter(rate.Limit(limits.MessagesPerSecond), limits.Burst)
		var toldReadOnly time.Time
		conn.SetReadDeadline(time.Now().Add(pongWait))
		conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(pongWait)) })
		for {
			kind, data, err := conn.ReadMessage()
			if err != nil {
				readErr <- err
				return
			}
			conn.SetReadDeadline(time.Now().Add(pongWait))
			if !limiter.Allow() {
				readErr <- errFlood
				return
			}
			switch kind {
			case websocket.BinaryMessage:
				if !p.input {
					if now := time.Now(); toldReadOnly.IsZero() || now.Sub(toldReadOnly) >= readOnlyEvery {
						toldReadOnly = now
						sendControl(Control{Type: "error", Message: readOnlyMessage})
					}
					continue
				}
				select {
				case <-p.stop:
					// Keys that arrive after a take-over ended are not typed.
					readErr <- errStopped
					return
				default:
				}
				if onInput != nil {
					onInput()
				}
				if _, err := sh.Write(data); err != nil {
					readErr <- err
					return
				}
			case websocket.TextMessage:
				var c Control
				if err := json.Unmarshal(data, &c); err != nil {
					sendControl(Control{Type: "error", Message: "text frames must be JSON control messages: {\"type\":\"resize\",\"cols\":80,\"rows\":24} or {\"type\":\"ping\"}"})
					continue
				}
				switch c.Type {
				case "resize":
					if !p.resize {
						continue // a watcher's window is not the learner's pty
					}
					if err := sh.Resize(c.Cols, c.Rows); err != nil {
						sendControl(Control{Type: "error", Message: fmt.Sprintf("resize to %dx%d: %v", c.Cols, c.Rows, err)})
					}
				case "ping":
					sendControl(Control{Type: "pong"})
				case "run":
					if !p.run {
						sendControl(Control{Type: "error", Message: "run is for the learner's own terminal; a watcher cannot run commands"})
						continue
					}
					if strings.TrimSpace(c.Command) == "" {
						sendControl(Control{Type: "error", Message: `run needs a command: {"type":"run","command":"kubectl get pods","interrupt":true}`})
						continue
					}
					if onInput != nil {
						onInput()
					}
					// Off the reader, in order: a run may wait for a prompt,
					// and the learner's keys and pings go on meanwhile.
					select {
					case runs <- c:
					default:
						sendControl(Control{Type: "error", Message: "too many commands are waiting to run: wait for the prompt"})
					}
				default:
					sendControl(Control{Type: "error", Message: fmt.Sprintf("unknown control message %q; known: resize, ping, run", c.Type)})
				}
			}
		}
	}()

	for {
		select {
		case chunk, ok := <-output:
			if ok {
				// What else is already waiting goes in the same frame: a
				// flood of output is then a few large frames, not one per
				// pty read (4 KB), each a write deadline, a syscall and a
				// message for the browser to handle.
				chunk, ok = coalesce(chunk, output, maxFrame)
				send(websocket.BinaryMessage, chunk)
			}
			if !ok {
				select {
				case <-sh.Done():
					code := sh.ExitCode()
					reason := fmt.Sprintf("the shell on %s exited with code %d", node, code)
					if msg := lastLine(sh.Stderr()); msg != "" && code != 0 {
						reason += ": " + msg
					}
					sendControl(Control{Type: "exit", Code: &code, Reason: reason})
					closeWith(CloseShellExited, reason)
					return nil
				case <-replaced:
					closeWith(CloseReplaced, "this terminal was opened in another window")
					return nil
				default:
					closeWith(websocket.CloseGoingAway, "the terminal fell behind; reconnect to catch up")
					return nil
				}
			}
		case err := <-readErr:
			var ce *websocket.CloseError
			switch {
			case errors.Is(err, errStopped):
				closeWith(CloseTakeoverEnded, p.stopReason)
				return nil
			case errors.Is(err, errFlood):
				closeWith(websocket.ClosePolicyViolation, "too many messages: slow down")
				return err
			case errors.Is(err, websocket.ErrReadLimit):
				closeWith(websocket.CloseMessageTooBig, fmt.Sprintf("message larger than %d bytes", limits.MaxMessage))
				return err
			case errors.As(err, &ce):
				return nil // the client closed
			}
			return nil
		case <-p.stop:
			closeWith(CloseTakeoverEnded, p.stopReason)
			return nil
		case err := <-writeErr:
			return err
		}
	}
}

var (
	errFlood   = errors.New("client sent too many messages")
	errStopped = errors.New("the take-over ended")
)

// maxFrame bounds the output one websocket frame carries.
const maxFrame = 256 << 10

// coalesce appends to first every chunk already waiting on output, up to
// max bytes; open is false if output was closed meanwhile (first, and what
// was appended, are still to be sent).
func coalesce(first []byte, output <-chan []byte, max int) (batch []byte, open bool) {
	batch = first
	for len(batch) < max {
		select {
		case more, ok := <-output:
			if !ok {
				return batch, false
			}
			batch = append(batch, more...)
		default:
			return batch, true
		}
	}
	return batch, true
}

// lastLine keeps a close reason within the 123 bytes a close frame allows.
func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}
