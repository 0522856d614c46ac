// Package terminal bridges a browser's websocket to a shell under a pty.
// A Shell outlives the websockets attached to it: a reloaded page attaches
// again and is sent the output it missed, once. The protocol is written down
// in docs/TERMINAL.md.
package terminal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	"github.com/creack/pty"
)

// ReplaySize is how much recent output a Shell keeps for a reattaching client.
const ReplaySize = 64 * 1024

// outputQueue is how many output chunks a client or watcher may lag behind
// the shell before it is dropped.
const outputQueue = 256

// Shell is a process under a pty with a buffer of its recent output, at
// most one attached client (the learner, who may type and resize) and any
// number of watchers (who get the same output and never disturb the client).
type Shell struct {
	proc Process

	mu       sync.Mutex
	ring     []byte // the last ReplaySize bytes of output
	client   chan []byte
	detached chan struct{} // closed when the current client is replaced
	watchers map[chan []byte]struct{}
	done     chan struct{}
	exitCode int
	exitErr  error
	// cols and rows are the terminal's size as last set (SetSize, Resize).
	cols, rows uint16
	// runMu keeps two runs (run.go) from interleaving their keys.
	runMu sync.Mutex
}

// Process is what a Shell runs: a terminal's bytes both ways, its size, and
// its end. A local command under a pty is one (Start); a process on a
// terminal the Docker engine made, reached through the Engine API, is
// another (dockercli.TTY).
type Process interface {
	io.ReadWriter
	// Resize sets the terminal's size; the process gets SIGWINCH.
	Resize(cols, rows uint16) error
	// Wait returns the exit code once Read has returned an error.
	Wait() (int, error)
	// Close ends the process, or the connection to it.
	Close() error
}

// tailBuffer keeps the last few lines written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2048 {
		t.buf = t.buf[len(t.buf)-2048:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// Stderr is what the command itself (not the shell) last complained
// about, where the process keeps that apart.
func (s *Shell) Stderr() string {
	if e, ok := s.proc.(interface{ Stderr() string }); ok {
		return e.Stderr()
	}
	return ""
}

// ptyProcess is a local command under a pty.
type ptyProcess struct {
	cmd    *exec.Cmd
	pty    *os.File
	stderr tailBuffer
}

func (p *ptyProcess) Read(b []byte) (int, error)  { return p.pty.Read(b) }
func (p *ptyProcess) Write(b []byte) (int, error) { return p.pty.Write(b) }
func (p *ptyProcess) Stderr() string              { return p.stderr.String() }

func (p *ptyProcess) Resize(cols, rows uint16) error {
	return pty.Setsize(p.pty, &pty.Winsize{Cols: cols, Rows: rows})
}

func (p *ptyProcess) Wait() (int, error) {
	err := p.cmd.Wait()
	p.pty.Close()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), err
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}

func (p *ptyProcess) Close() error {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGHUP)
		_ = p.cmd.Process.Kill()
	}
	return nil
}

// Start runs cmd under a new pty of the given size. The command's own
// stderr (not the shell's, which goes through the pty) is kept apart: the
// docker CLI prints its complaints there ("failed to resize tty"), and they
// belong in the exit reason, not on the learner's screen.
func Start(cmd *exec.Cmd, cols, rows uint16) (*Shell, error) {
	p, err := StartProcess(cmd, cols, rows)
	if err != nil {
		return nil, err
	}
	return New(p), nil
}

// StartProcess runs cmd under a new pty of the given size, as a Process.
func StartProcess(cmd *exec.Cmd, cols, rows uint16) (Process, error) {
	if cols == 0 || rows == 0 {
		cols, rows = 80, 24
	}
	p := &ptyProcess{cmd: cmd}
	if cmd.Stderr == nil {
		cmd.Stderr = &p.stderr
	}
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: cols, Rows: rows})
	if err != nil {
		return nil, err
	}
	p.pty = f
	return p, nil
}

// New makes a Shell of a running process.
func New(p Process) *Shell {
	s := &Shell{proc: p, done: make(chan struct{})}
	go s.readLoop()
	return s
}

func (s *Shell) readLoop() {
	buf := make([]byte, 32*1024)
	for {
		n, err := s.proc.Read(buf)
		if n > 0 {
			chunk := make([]byte, n)
			copy(chunk, buf[:n])
			s.mu.Lock()
			s.ring = append(s.ring, chunk...)
			if over := len(s.ring) - ReplaySize; over > 0 {
				s.ring = append(s.ring[:0:0], s.ring[over:]...)
			}
			if s.client != nil {
				select {
				case s.client <- chunk:
				default:
					// The client cannot keep up: drop it; it can reattach
					// and get the replay.
					s.detachLocked(false)
				}
			}
			for w := range s.watchers {
				select {
				case w <- chunk:
				default:
					// Nor a watcher: the learner's shell never waits
					// for someone looking on.
					close(w)
					delete(s.watchers, w)
				}
			}
			s.mu.Unlock()
		}
		if err != nil {
			break
		}
	}
	code, err := s.proc.Wait()
	s.mu.Lock()
	s.exitErr = err
	s.exitCode = code
	s.mu.Unlock()
	s.proc.Close()
	// Done closes before the client's and watchers' output does, so they
	// can tell an exit from being dropped.
	close(s.done)
	s.mu.Lock()
	s.detachLocked(false)
	for w := range s.watchers {
		close(w)
		delete(s.watchers, w)
	}
	s.mu.Unlock()
}

// Attach makes the caller the shell's client, replacing any other. It
// returns the recent output to replay, a channel of new output (closed when
// the client is replaced or dropped or the shell ends), a channel closed
// only when another client replaced this one, and detach.
func (s *Shell) Attach() (replay []byte, output <-chan []byte, replaced <-chan struct{}, detach func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.detachLocked(true)
	ch := make(chan []byte, outputQueue)
	gone := make(chan struct{})
	select {
	case <-s.done:
		close(ch)
		close(gone)
		return append([]byte(nil), s.ring...), ch, gone, func() {}
	default:
	}
	s.client, s.detached = ch, gone
	return append([]byte(nil), s.ring...), ch, gone, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.client == ch {
			s.detachLocked(false)
		}
	}
}

// Watch adds a watcher beside the client: it returns the recent output to
// replay, a channel of new output (closed when the watcher falls behind, is
// detached or the shell ends) and detach. A watcher neither replaces the
// client nor is dropped by its Attach.
func (s *Shell) Watch() (replay []byte, output <-chan []byte, detach func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan []byte, outputQueue)
	replay = append([]byte(nil), s.ring...)
	select {
	case <-s.done:
		close(ch)
		return replay, ch, func() {}
	default:
	}
	if s.watchers == nil {
		s.watchers = make(map[chan []byte]struct{})
	}
	s.watchers[ch] = struct{}{}
	return replay, ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.watchers[ch]; ok {
			close(ch)
			delete(s.watchers, ch)
		}
	}
}

// detachLocked drops the current client; replaced says another client took
// its place.
func (s *Shell) detachLocked(replaced bool) {
	if s.client != nil {
		// detached first: a client that finds its output closed must
		// already be able to tell it was replaced, not dropped.
		if replaced {
			close(s.detached)
		}
		close(s.client)
		s.client, s.detached = nil, nil
	}
}

// Write sends input to the shell.
func (s *Shell) Write(p []byte) (int, error) {
	select {
	case <-s.done:
		return 0, io.ErrClosedPipe
	default:
	}
	return s.proc.Write(p)
}

// MaxSize is the most columns or rows a terminal may have.
const MaxSize = 1000

// Resize changes the pty's size; the shell gets SIGWINCH.
func (s *Shell) Resize(cols, rows uint16) error {
	if cols == 0 || rows == 0 || cols > MaxSize || rows > MaxSize {
		return fmt.Errorf("cols and rows must be from 1 to %d", MaxSize)
	}
	if err := s.proc.Resize(cols, rows); err != nil {
		return err
	}
	s.SetSize(cols, rows)
	return nil
}

// SetSize records the terminal's size (the size it was started at, or
// resized to), which watchers are told so that they draw the learner's
// screen as the learner sees it.
func (s *Shell) SetSize(cols, rows uint16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cols, s.rows = cols, rows
}

// Size is the last recorded size; 0, 0 when none was.
func (s *Shell) Size() (cols, rows uint16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cols, s.rows
}

// Done is closed when the shell has exited.
func (s *Shell) Done() <-chan struct{} { return s.done }

// ExitCode is the shell's exit code once Done is closed.
func (s *Shell) ExitCode() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exitCode
}

// Close ends the shell's process.
func (s *Shell) Close() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.proc.Close()
}
