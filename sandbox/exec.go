package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"

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
	args := []string{"exec"}
	if stdin != nil {
		args = append(args, "-i")
	}
	args = append(args, n.Container)
	args = append(args, cmd...)
	c := exec.CommandContext(ctx, dockercli.Binary, args...)
	c.Stdin, c.Stdout, c.Stderr = stdin, stdout, stderr
	err = c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, fmt.Errorf("exec in %s/%s: %w", name, node, err)
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
	return exec.Command(dockercli.Binary, "exec", "-it", "-e", "TERM=xterm-256color", "-w", "/root",
		n.Container, "bash", "-l"), nil
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
