package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"k8s.io/client-go/rest"

	"github.com/podpath/podpath/internal/dockercli"
)

// Exec runs cmd in a node of a sandbox and returns its exit code. A non-zero
// exit code is not an error; failing to run the command at all is.
func (m *Manager) Exec(ctx context.Context, name, node string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if len(cmd) == 0 {
		return -1, errors.New("no command to run")
	}
	n, err := m.node(ctx, name, node)
	if err != nil {
		return -1, err
	}
	return execIn(ctx, name, n, cmd, stdin, stdout, stderr)
}

// execIn runs cmd in a node through the Docker Engine API (an exec is two
// requests on the engine's socket, not a forked docker CLI).
func execIn(ctx context.Context, name string, n Node, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if len(cmd) == 0 {
		return -1, errors.New("no command to run")
	}
	code, err := dockercli.Exec(ctx, n.Container, cmd, stdin, stdout, stderr)
	if err != nil {
		if ctx.Err() != nil {
			return -1, fmt.Errorf("exec in %s/%s: %w", name, n.Alias, ctx.Err())
		}
		return -1, fmt.Errorf("exec in %s/%s: %w", name, n.Alias, err)
	}
	return code, nil
}

// KeeperSession is the tmux session (on the socket -L podpath) each node's
// learner shell lives in.
const KeeperSession = "main"

// KeeperCommand attaches to the tmux session named session holding a login
// shell, creating it the first time, so the shell and what runs in it
// outlive the attach (a server restart, a killed server). A node image
// without tmux (an official kindest/node) gets a plain login shell.
func KeeperCommand(session string) []string {
	return []string{"sh", "-c", `if command -v tmux >/dev/null 2>&1 && [ -f /etc/podpath/tmux.conf ]; then
  exec tmux -L podpath -f /etc/podpath/tmux.conf new-session -A -s ` + session + ` -c /root "bash -l"
fi
exec bash -l`}
}

// WatchCommand attaches one more client to the learner's shell on a node,
// for an instructor watching (read-only) or taking over (control): a tmux
// client that ignores its own size, so the instructor's window never
// resizes the learner's screen. It fails where no keeper runs (a node
// image without tmux): there is no shell to share.
func WatchCommand(session string, control bool) []string {
	flags := "ignore-size,read-only"
	if control {
		flags = "ignore-size"
	}
	return []string{"sh", "-c", `command -v tmux >/dev/null 2>&1 && [ -f /etc/podpath/tmux.conf ] || { echo "this node has no shell keeper (tmux): the learner's shell cannot be shared" >&2; exit 3; }
exec tmux -L podpath -f /etc/podpath/tmux.conf attach-session -t ` + session + ` -f ` + flags}
}

// Watch attaches to the learner's shell on a node as a watcher (see
// WatchCommand), on a terminal of the given size.
func (t *Target) Watch(ctx context.Context, node string, control bool, cols, rows uint16) (*dockercli.TTY, error) {
	return t.Terminal(ctx, node, WatchCommand(KeeperSession, control), cols, rows)
}

// Attach starts the learner's shell on a node (in its keeper; see
// KeeperCommand) on a terminal the Docker engine makes, reached through the
// Engine API: no docker CLI process and no local pty per terminal.
func (t *Target) Attach(ctx context.Context, node string, cols, rows uint16) (*dockercli.TTY, error) {
	return t.Terminal(ctx, node, KeeperCommand(KeeperSession), cols, rows)
}

// Foreground names the program in the foreground of the learner's shell on
// a node ("bash" at a prompt, "kubectl" during a watch), as the shell's
// keeper sees it; an error where no keeper runs (a node image without
// tmux). A "run in terminal" button asks it before it types.
func (t *Target) Foreground(ctx context.Context, node string) (string, error) {
	return KeeperForeground(ctx, t, node)
}

// WindowSize is the size of the learner's shell on a node (its keeper's
// window), for a watcher to draw it as the learner sees it.
func (t *Target) WindowSize(ctx context.Context, node string) (cols, rows uint16, err error) {
	return KeeperWindowSize(ctx, t, node)
}

// Execer runs a command in a node of one sandbox (a Target of either backend).
type Execer interface {
	Exec(ctx context.Context, node string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error)
}

// KeeperForeground asks a node's shell keeper which program is in the
// foreground of the learner's shell (see Target.Foreground).
func KeeperForeground(ctx context.Context, ex Execer, node string) (string, error) {
	var out, errOut strings.Builder
	code, err := ex.Exec(ctx, node, []string{"bash", "-c", "tmux -L podpath display-message -p -t " + KeeperSession + " '#{pane_current_command}'"}, nil, &out, &errOut)
	if err != nil {
		return "", err
	}
	name := strings.TrimSpace(out.String())
	if code != 0 || name == "" {
		return "", fmt.Errorf("no shell keeper on %s: %s", node, strings.TrimSpace(errOut.String()))
	}
	return name, nil
}

// KeeperWindowSize asks a node's shell keeper the size of the learner's
// shell (see Target.WindowSize).
func KeeperWindowSize(ctx context.Context, ex Execer, node string) (cols, rows uint16, err error) {
	var out strings.Builder
	code, err := ex.Exec(ctx, node, []string{"bash", "-c", "tmux -L podpath display-message -p -t " + KeeperSession + " '#{window_width} #{window_height}'"}, nil, &out, nil)
	if err != nil {
		return 0, 0, err
	}
	if _, err := fmt.Sscan(out.String(), &cols, &rows); err != nil || code != 0 || cols == 0 || rows == 0 {
		return 0, 0, fmt.Errorf("no shell keeper on %s", node)
	}
	return cols, rows, nil
}

// Terminal runs cmd on a node on a terminal the Docker engine makes.
func (t *Target) Terminal(ctx context.Context, node string, cmd []string, cols, rows uint16) (*dockercli.TTY, error) {
	n, err := t.node(ctx, node)
	if err != nil {
		return nil, err
	}
	tty, err := dockercli.ExecTTY(ctx, n.Container, cmd, []string{"TERM=xterm-256color"}, "/root", cols, rows)
	if err != nil {
		return nil, fmt.Errorf("open a terminal on %s: %w", node, err)
	}
	return tty, nil
}

func (m *Manager) node(ctx context.Context, name, alias string) (Node, error) {
	info, err := m.Get(ctx, name)
	if err != nil {
		return Node{}, err
	}
	n, err := info.Node(alias)
	if err != nil {
		return Node{}, err
	}
	if n.State == "paused" {
		return Node{}, fmt.Errorf("sandbox %s is hibernated: resume it first", name)
	}
	return n, nil
}

// Target is one sandbox as the grader and the terminal see it: commands in
// its nodes and its API server. It remembers the node containers and the
// client configuration, which do not change for a sandbox's life.
type Target struct {
	m    *Manager
	name string

	mu     sync.Mutex
	nodes  map[string]Node
	rest   *rest.Config
	agents map[string]*ProbeChannels // by node container
}

// Target returns the sandbox name as a Target.
func (m *Manager) Target(name string) *Target { return &Target{m: m, name: name} }

// Name is the sandbox's name.
func (t *Target) Name() string { return t.name }

func (t *Target) node(ctx context.Context, alias string) (Node, error) {
	t.mu.Lock()
	n, ok := t.nodes[alias]
	t.mu.Unlock()
	if ok {
		return n, nil
	}
	info, err := t.m.Get(ctx, t.name)
	if err != nil {
		return Node{}, err
	}
	t.mu.Lock()
	t.nodes = map[string]Node{}
	for _, n := range info.Nodes {
		t.nodes[n.Alias] = n
	}
	t.mu.Unlock()
	return info.Node(alias)
}

// Exec runs cmd in the node with the given alias; see Manager.Exec. A bash
// script with no stdin (every probe) goes through the node's probe channel
// (agent.go); anything else, or when the channel cannot start, is an exec.
func (t *Target) Exec(ctx context.Context, node string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	n, err := t.node(ctx, node)
	if err != nil {
		return -1, err
	}
	if stdin == nil && len(cmd) == 3 && cmd[0] == "bash" && cmd[1] == "-c" {
		code, sent, err := t.agentExec(ctx, n, cmd[2], stdout, stderr)
		if sent {
			if err != nil {
				return -1, fmt.Errorf("exec in %s/%s: %w", t.name, n.Alias, err)
			}
			return code, nil
		}
		// No channel could start (the command did not run): an exec.
		t.m.log.Debug("no probe channel; using an exec", "sandbox", t.name, "node", n.Alias, "err", err)
	}
	return execIn(ctx, t.name, n, cmd, stdin, stdout, stderr)
}

// RESTConfig returns the client configuration of the sandbox's API server.
func (t *Target) RESTConfig(ctx context.Context) (*rest.Config, error) {
	t.mu.Lock()
	cfg := t.rest
	t.mu.Unlock()
	if cfg != nil {
		return rest.CopyConfig(cfg), nil
	}
	cfg, err := t.m.RESTConfig(ctx, t.name)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.rest = cfg
	t.mu.Unlock()
	return rest.CopyConfig(cfg), nil
}

// Dial opens a TCP connection to port on the node with the given alias (a
// NodePort, or anything listening on the node): straight to the node's
// address on the sandbox's Docker network, which the host (and a server
// in a container with the host's network) reaches.
func (t *Target) Dial(ctx context.Context, node string, port int) (net.Conn, error) {
	n, err := t.node(ctx, node)
	if err != nil {
		return nil, err
	}
	if n.IP == "" {
		return nil, fmt.Errorf("node %s of sandbox %s has no address (state %s)", n.Alias, t.name, n.State)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", net.JoinHostPort(n.IP, strconv.Itoa(port)))
}
