package kube

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podpath/podpath/sandbox"
)

// Target is one learner cluster as the grader and the terminals use it:
// commands in its node Pods through the host's exec API, and its API
// server through a port-forward.
type Target struct {
	b    *Backend
	name string

	mu   sync.Mutex
	rest *rest.Config
	// ours holds the node Pods seen to carry this installation's label,
	// by node: a name alone could be another installation's Pod in a
	// shared namespace.
	ours map[string]bool
	// probes are the probe channels by node (sandbox.ProbeChannels),
	// started on first use; closed ends them.
	probes map[string]*sandbox.ProbeChannels
	closed bool
}

// probesFor returns the node's probe channels, nil once the target is
// closed.
func (t *Target) probesFor(node string) *sandbox.ProbeChannels {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	if t.probes == nil {
		t.probes = map[string]*sandbox.ProbeChannels{}
	}
	p := t.probes[node]
	if p == nil {
		p = sandbox.NewProbeChannels(t.pipe(node))
		t.probes[node] = p
	}
	return p
}

// pipe starts a command in the node whose stdin and stdout stay open as
// one stream: an exec that outlives the request that started it. Closing
// the stream closes the command's stdin, so a probe channel's loop reads
// its end and exits (cancelling the exec alone would leave the process
// running in the node); the exec itself is cancelled a little later as a
// backstop.
func (t *Target) pipe(node string) sandbox.PipeStarter {
	return func(ctx context.Context, cmd []string) (io.ReadWriteCloser, error) {
		ex, err := t.executor(node, cmd, true, false)
		if err != nil {
			return nil, err
		}
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		go func() {
			err := ex.StreamWithContext(sctx, remotecommand.StreamOptions{Stdin: inR, Stdout: outW, Stderr: io.Discard})
			if err == nil {
				err = io.EOF
			}
			outW.CloseWithError(err)
			inR.CloseWithError(err)
			cancel()
		}()
		return &execPipe{w: inW, r: outR, cancel: cancel}, nil
	}
}

type execPipe struct {
	w      *io.PipeWriter
	r      *io.PipeReader
	cancel context.CancelFunc
	once   sync.Once
}

func (p *execPipe) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p *execPipe) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p *execPipe) Close() error {
	p.once.Do(func() {
		p.w.Close()
		p.r.Close()
		time.AfterFunc(5*time.Second, p.cancel)
	})
	return nil
}

// checkOurs makes sure the node's Pod is this installation's before the
// first command reaches it.
func (t *Target) checkOurs(ctx context.Context, node string) error {
	t.mu.Lock()
	ok := t.ours[node]
	t.mu.Unlock()
	if ok {
		return nil
	}
	p, err := t.b.cs.CoreV1().Pods(t.b.opts.Namespace).Get(ctx, PodName(t.name, node), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, ierr := t.b.Get(ctx, t.name); ierr != nil {
			return ierr
		}
		return fmt.Errorf("sandbox %s has no node %q", t.name, node)
	}
	if err != nil {
		return err
	}
	if p.Labels[LabelInstallation] != t.b.opts.Installation || p.Labels[LabelNode] != node {
		return fmt.Errorf("sandbox %q: %w (Pod %s belongs to installation %q)", t.name, sandbox.ErrNotFound, p.Name, p.Labels[LabelInstallation])
	}
	t.mu.Lock()
	if t.ours == nil {
		t.ours = map[string]bool{}
	}
	t.ours[node] = true
	t.mu.Unlock()
	return nil
}

// Target returns the sandbox name as a Target.
func (b *Backend) Target(name string) *Target { return &Target{b: b, name: name} }

// Name is the sandbox's name.
func (t *Target) Name() string { return t.name }

// executor is an exec of cmd in a node Pod's node container: the WebSocket
// protocol, or SPDY where the host's API server or a proxy before it does
// not upgrade to WebSockets (as kubectl does it).
//
// The command joins the node's cgroup namespace first: an exec joins the
// namespaces the container was made with, and the node's own (made by
// unshare, see pods.go) is not among them, so without it a learner would
// read the host's cgroup paths in /proc/PID/cgroup where the Docker
// backend shows the node's.
func (t *Target) executor(node string, cmd []string, stdin, tty bool) (remotecommand.Executor, error) {
	cmd = append([]string{"nsenter", "--target", "1", "--cgroup", "--"}, cmd...)
	req := t.b.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(t.b.opts.Namespace).
		Name(PodName(t.name, node)).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: nodeContainer, Command: cmd,
			Stdin: stdin, Stdout: true, Stderr: !tty, TTY: tty,
		}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(t.b.cfg, "GET", req.URL().String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(t.b.cfg, "POST", req.URL())
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// Exec runs cmd in a node and returns its exit code. A non-zero exit code
// is not an error; failing to run the command at all is.
func (t *Target) Exec(ctx context.Context, node string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if len(cmd) == 0 {
		return -1, errors.New("no command to run")
	}
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	if err := t.checkOurs(ctx, node); err != nil {
		return -1, fmt.Errorf("exec in %s/%s: %w", t.name, node, err)
	}
	// A bash script with no stdin (every probe) goes through the node's
	// probe channel: a write and a read on an open stream instead of an
	// exec through the host's API server per check.
	if stdin == nil && len(cmd) == 3 && cmd[0] == "bash" && cmd[1] == "-c" {
		if p := t.probesFor(node); p != nil {
			code, sent, err := p.Run(ctx, cmd[2], stdout, stderr)
			if sent {
				if err != nil {
					return -1, fmt.Errorf("exec in %s/%s: %w", t.name, node, err)
				}
				return code, nil
			}
			// No channel could start (the command did not run): an exec.
			t.b.log.Debug("no probe channel; using an exec", "sandbox", t.name, "node", node, "err", err)
		}
	}
	// The exec copies the two streams in two goroutines and, when ctx
	// ends, returns without waiting for them: both writers are guarded by
	// one lock (one writer given for both, a bytes.Buffer say, must not
	// see two io.Copy at once) and shut once Exec returns.
	g := &guard{}
	stdout, stderr = g.writer(stdout), g.writer(stderr)
	defer g.shut()
	ex, err := t.executor(node, cmd, stdin != nil, false)
	if err != nil {
		return -1, fmt.Errorf("exec in %s/%s: %w", t.name, node, err)
	}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	var exit utilexec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit) && exit.Exited():
		return exit.ExitStatus(), nil
	case ctx.Err() != nil:
		return -1, fmt.Errorf("exec in %s/%s: %w", t.name, node, ctx.Err())
	default:
		return -1, fmt.Errorf("exec in %s/%s: %w", t.name, node, t.explain(ctx, node, err))
	}
}

// explain adds what the host cluster says about a node Pod that could not
// run a command (gone, not running).
func (t *Target) explain(ctx context.Context, node string, err error) error {
	p, gerr := t.b.cs.CoreV1().Pods(t.b.opts.Namespace).Get(ctx, PodName(t.name, node), metav1.GetOptions{})
	if gerr != nil {
		if _, ierr := t.b.Get(ctx, t.name); errors.Is(ierr, sandbox.ErrNotFound) {
			return fmt.Errorf("%w: %w", err, ierr)
		}
		return err
	}
	if p.Status.Phase != corev1.PodRunning {
		return fmt.Errorf("%w (node Pod %s: %s)", err, p.Name, podStatus(p))
	}
	return err
}

// RESTConfig is the client configuration of the sandbox's API server.
func (t *Target) RESTConfig(ctx context.Context) (*rest.Config, error) {
	t.mu.Lock()
	cfg := t.rest
	t.mu.Unlock()
	if cfg != nil {
		return rest.CopyConfig(cfg), nil
	}
	cfg, err := t.b.RESTConfig(ctx, t.name)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.rest = cfg
	t.mu.Unlock()
	return rest.CopyConfig(cfg), nil
}

// Attach starts the learner's shell on a node, in its keeper (see
// sandbox.KeeperCommand), on a terminal of the given size.
func (t *Target) Attach(ctx context.Context, node string, cols, rows uint16) (*TTY, error) {
	return t.Terminal(ctx, node, sandbox.KeeperCommand(sandbox.KeeperSession), cols, rows)
}

// Watch attaches one more client to the learner's shell on a node (see
// sandbox.WatchCommand).
func (t *Target) Watch(ctx context.Context, node string, control bool, cols, rows uint16) (*TTY, error) {
	return t.Terminal(ctx, node, sandbox.WatchCommand(sandbox.KeeperSession, control), cols, rows)
}

// Foreground names the program in the foreground of the learner's shell.
func (t *Target) Foreground(ctx context.Context, node string) (string, error) {
	return sandbox.KeeperForeground(ctx, t, node)
}

// WindowSize is the size of the learner's shell on a node.
func (t *Target) WindowSize(ctx context.Context, node string) (cols, rows uint16, err error) {
	return sandbox.KeeperWindowSize(ctx, t, node)
}

// Close ends the target's probe channels; a command after it is an exec.
func (t *Target) Close() {
	t.mu.Lock()
	all := t.probes
	t.probes, t.closed = nil, true
	t.mu.Unlock()
	for _, p := range all {
		p.Close()
	}
}

// Terminal runs cmd on a node on a terminal the host's kubelet makes,
// reached through the exec API. It returns once the exec's streams are up,
// or the error that kept them from coming up.
func (t *Target) Terminal(ctx context.Context, node string, cmd []string, cols, rows uint16) (*TTY, error) {
	if err := t.checkOurs(ctx, node); err != nil {
		return nil, fmt.Errorf("open a terminal on %s: %w", node, err)
	}
	// The shell records its PID, so Close can hang it up: cancelling an
	// exec's stream does not end its process on containerd.
	id := strings.ToLower(rand.Text())
	wrapped := append([]string{"sh", "-c", `echo $$ > /run/podpath-tty-` + id + `; exec env TERM=xterm-256color "$@"`, "podpath-tty"}, cmd...)
	ex, err := t.executor(node, wrapped, true, true)
	if err != nil {
		return nil, fmt.Errorf("open a terminal on %s: %w", node, err)
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tty := &TTY{t: t, node: node, id: id, in: inW, out: outR, sizes: make(chan remotecommand.TerminalSize, 1),
		started: make(chan struct{}), done: make(chan struct{}), cancel: cancel}
	tty.Resize(cols, rows)
	go func() {
		err := ex.StreamWithContext(sctx, remotecommand.StreamOptions{
			Stdin: inR, Stdout: outW, Tty: true, TerminalSizeQueue: tty,
		})
		var exit utilexec.ExitError
		switch {
		case err == nil:
			tty.code = 0
		case errors.As(err, &exit) && exit.Exited():
			tty.code = exit.ExitStatus()
		default:
			tty.code, tty.err = -1, err
		}
		outW.CloseWithError(io.EOF)
		inR.Close()
		close(tty.done)
	}()
	select {
	case <-tty.started:
		return tty, nil
	case <-tty.done:
		if tty.err != nil {
			return nil, fmt.Errorf("open a terminal on %s: %w", node, t.explain(ctx, node, tty.err))
		}
		return tty, nil // it ran and ended at once; Wait says how
	case <-ctx.Done():
		tty.Close()
		return nil, fmt.Errorf("open a terminal on %s: %w", node, ctx.Err())
	}
}

// TTY is a process on a terminal in a node Pod: its bytes both ways, its
// size, its end.
type TTY struct {
	t     *Target
	node  string
	id    string
	in    *io.PipeWriter
	out   *io.PipeReader
	sizes chan remotecommand.TerminalSize
	// started is closed when the exec first asks for a size: its streams
	// are up.
	started     chan struct{}
	startedOnce sync.Once
	done        chan struct{}
	cancel      context.CancelFunc
	once        sync.Once

	code int
	err  error
}

func (t *TTY) Read(p []byte) (int, error)  { return t.out.Read(p) }
func (t *TTY) Write(p []byte) (int, error) { return t.in.Write(p) }

// Resize sets the terminal's size; the process gets SIGWINCH. Only the
// newest size waiting to be sent is kept.
func (t *TTY) Resize(cols, rows uint16) error {
	s := remotecommand.TerminalSize{Width: cols, Height: rows}
	for {
		select {
		case t.sizes <- s:
			return nil
		default:
		}
		select {
		case <-t.sizes:
		default:
		}
	}
}

// Next hands the exec the terminal's next size (remotecommand's
// TerminalSizeQueue); nil once the process has ended.
func (t *TTY) Next() *remotecommand.TerminalSize {
	t.startedOnce.Do(func() { close(t.started) })
	select {
	case s := <-t.sizes:
		return &s
	case <-t.done:
		return nil
	}
}

// Wait returns the exit code once the process has ended.
func (t *TTY) Wait() (int, error) {
	<-t.done
	return t.code, t.err
}

// Close ends the exec and hangs up its process (SIGHUP: a shell ends, a
// tmux client detaches), by a second exec in the background.
func (t *TTY) Close() error {
	t.once.Do(func() {
		t.cancel()
		t.in.Close()
		t.out.Close()
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			f := "/run/podpath-tty-" + t.id
			_, _ = t.t.Exec(ctx, t.node, []string{"sh", "-c", `[ -f ` + f + ` ] && kill -HUP "$(cat ` + f + `)" 2>/dev/null; rm -f ` + f}, nil, nil, nil)
		}()
	})
	return nil
}

// guard serialises the writes of one exec's two output copies and drops
// any that come after the exec has returned (its caller reads the output
// then).
type guard struct {
	mu     sync.Mutex
	closed bool
}

func (g *guard) writer(w io.Writer) io.Writer { return guardedWriter{g: g, w: w} }

func (g *guard) shut() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

type guardedWriter struct {
	g *guard
	w io.Writer
}

func (w guardedWriter) Write(p []byte) (int, error) {
	w.g.mu.Lock()
	defer w.g.mu.Unlock()
	if w.g.closed {
		return len(p), nil
	}
	return w.w.Write(p)
}

// Dial opens a TCP connection to port on a node (a NodePort, or anything
// listening in the node's network namespace): through the host cluster's
// API server, as the learner cluster's own API server is reached, so the
// server needs no route to the node Pods and no hole in their
// NetworkPolicy.
func (t *Target) Dial(ctx context.Context, node string, port int) (net.Conn, error) {
	if err := t.checkOurs(ctx, node); err != nil {
		return nil, err
	}
	d := podDialer{cs: t.b.cs, cfg: t.b.cfg, namespace: t.b.opts.Namespace, pod: PodName(t.name, node), port: port}
	return d.DialContext(ctx, "tcp", "")
}
