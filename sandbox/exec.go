package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
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

func execIn(ctx context.Context, name string, n Node, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if len(cmd) == 0 {
		return -1, errors.New("no command to run")
	}
	args := []string{"exec"}
	if stdin != nil {
		args = append(args, "-i")
	}
	args = append(args, n.Container)
	args = append(args, cmd...)
	c := exec.CommandContext(ctx, dockercli.Binary, args...)
	c.Stdin, c.Stdout, c.Stderr = stdin, stdout, stderr
	err := c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, fmt.Errorf("exec in %s/%s: %w", name, n.Alias, err)
	}
	return 0, nil
}

// AttachCommand returns the command that runs an interactive login shell in
// a node; the caller runs it under a pty.
func (m *Manager) AttachCommand(ctx context.Context, name, node string) (*exec.Cmd, error) {
	n, err := m.node(ctx, name, node)
	if err != nil {
		return nil, err
	}
	return attachCommand(n), nil
}

// KeeperSession is the tmux session (on the socket -L podpath) each node's
// learner shell lives in.
const KeeperSession = "main"

// attachScript attaches to the node's learner shell in tmux, creating it the
// first time, so the shell and what runs in it outlive the server's attach
// (a server restart, a killed server). A node image without tmux (an
// official kindest/node) gets a plain login shell.
const attachScript = `if command -v tmux >/dev/null 2>&1 && [ -f /etc/podpath/tmux.conf ]; then
  exec tmux -L podpath -f /etc/podpath/tmux.conf new-session -A -s ` + KeeperSession + ` -c /root "bash -l"
fi
exec bash -l`

func attachCommand(n Node) *exec.Cmd {
	return exec.Command(dockercli.Binary, "exec", "-it", "-e", "TERM=xterm-256color", "-w", "/root",
		n.Container, "sh", "-c", attachScript)
}

// AttachCommand returns the command that runs a login shell in a node.
func (t *Target) AttachCommand(ctx context.Context, node string) (*exec.Cmd, error) {
	n, err := t.node(ctx, node)
	if err != nil {
		return nil, err
	}
	return attachCommand(n), nil
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

	mu    sync.Mutex
	nodes map[string]Node
	rest  *rest.Config
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

// Exec runs cmd in the node with the given alias; see Manager.Exec.
func (t *Target) Exec(ctx context.Context, node string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	n, err := t.node(ctx, node)
	if err != nil {
		return -1, err
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
