package dockercli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"
	"github.com/docker/docker/pkg/stdcopy"
)

// The learner's path (probes, terminals, inspect, pause and unpause) talks
// to the Docker Engine API through Docker's own Go client instead of forking
// the CLI: an exec costs a request or two on a unix socket, not a process.
// The client negotiates the API version down (Debian's engine 20.10 speaks
// 1.41). Building images and kind's own calls still use the CLI.

var (
	engineOnce sync.Once
	engine     *client.Client
	engineErr  error
)

// Engine returns the shared Engine API client (DOCKER_HOST and friends
// apply, as for the CLI).
func Engine() (*client.Client, error) {
	engineOnce.Do(func() {
		engine, engineErr = client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	})
	return engine, engineErr
}

// ErrNoContainer is returned for a container the engine does not have.
var ErrNoContainer = errors.New("no such container")

func engineError(what string, err error) error {
	if errdefs.IsNotFound(err) {
		return fmt.Errorf("%s: %w", what, ErrNoContainer)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Exec runs cmd in a running container and returns its exit code, with
// stdout and stderr kept apart. A non-zero exit is not an error. When ctx
// ends first, the connection is closed and ctx's error returned.
func Exec(ctx context.Context, containerID string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	c, err := Engine()
	if err != nil {
		return -1, err
	}
	created, err := c.ContainerExecCreate(ctx, containerID, container.ExecOptions{
		Cmd: cmd, AttachStdin: stdin != nil, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return -1, engineError("exec in "+containerID, err)
	}
	resp, err := c.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return -1, engineError("exec in "+containerID, err)
	}
	defer resp.Close()
	stop := context.AfterFunc(ctx, resp.Close)
	defer stop()
	if stdin != nil {
		go func() {
			_, _ = io.Copy(resp.Conn, stdin)
			_ = resp.CloseWrite()
		}()
	}
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	if _, err := stdcopy.StdCopy(stdout, stderr, resp.Reader); err != nil && ctx.Err() == nil {
		return -1, fmt.Errorf("exec in %s: read output: %w", containerID, err)
	}
	if ctx.Err() != nil {
		return -1, ctx.Err()
	}
	ins, err := c.ContainerExecInspect(context.WithoutCancel(ctx), created.ID)
	if err != nil {
		return -1, engineError("exec in "+containerID, err)
	}
	return ins.ExitCode, nil
}

// TTY is an interactive process in a container on a pseudo-terminal the
// engine made: its output and input are the hijacked connection.
type TTY struct {
	id   string
	c    *client.Client
	conn io.ReadWriteCloser
	once sync.Once
}

// ExecTTY starts cmd in a container on a terminal of the given size.
func ExecTTY(ctx context.Context, containerID string, cmd, env []string, workdir string, cols, rows uint16) (*TTY, error) {
	c, err := Engine()
	if err != nil {
		return nil, err
	}
	size := &[2]uint{uint(rows), uint(cols)}
	created, err := c.ContainerExecCreate(ctx, containerID, container.ExecOptions{
		Cmd: cmd, Env: env, WorkingDir: workdir, Tty: true, ConsoleSize: size,
		AttachStdin: true, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return nil, engineError("terminal in "+containerID, err)
	}
	resp, err := c.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{Tty: true, ConsoleSize: size})
	if err != nil {
		return nil, engineError("terminal in "+containerID, err)
	}
	t := &TTY{id: created.ID, c: c, conn: hijacked{resp.Conn, resp.Reader}}
	// Engines before API 1.42 ignore the size given at create.
	_ = t.Resize(cols, rows)
	return t, nil
}

type hijacked struct {
	io.ReadWriteCloser
	r io.Reader
}

func (h hijacked) Read(p []byte) (int, error) { return h.r.Read(p) }

func (t *TTY) Read(p []byte) (int, error)  { return t.conn.Read(p) }
func (t *TTY) Write(p []byte) (int, error) { return t.conn.Write(p) }

// Resize sets the terminal's size; the process gets SIGWINCH.
func (t *TTY) Resize(cols, rows uint16) error {
	return t.c.ContainerExecResize(context.Background(), t.id, container.ResizeOptions{Width: uint(cols), Height: uint(rows)})
}

// Wait returns the exit code once the output has ended.
func (t *TTY) Wait() (int, error) {
	ins, err := t.c.ContainerExecInspect(context.Background(), t.id)
	if err != nil {
		return -1, err
	}
	if ins.Running {
		return -1, errors.New("the connection closed while the process still runs")
	}
	return ins.ExitCode, nil
}

// Close ends the connection; a process that reads the terminal then gets
// a hangup.
func (t *TTY) Close() error {
	t.once.Do(func() { _ = t.conn.Close() })
	return nil
}

// Pause freezes containers (docker pause).
func Pause(ctx context.Context, ids ...string) error {
	return each(ctx, ids, func(c *client.Client, id string) error { return c.ContainerPause(ctx, id) })
}

// Unpause thaws them.
func Unpause(ctx context.Context, ids ...string) error {
	return each(ctx, ids, func(c *client.Client, id string) error { return c.ContainerUnpause(ctx, id) })
}

func each(ctx context.Context, ids []string, fn func(*client.Client, string) error) error {
	c, err := Engine()
	if err != nil {
		return err
	}
	var g sync.WaitGroup
	errs := make([]error, len(ids))
	for i, id := range ids {
		g.Add(1)
		go func() {
			defer g.Done()
			if err := fn(c, id); err != nil {
				errs[i] = engineError(id, err)
			}
		}()
	}
	g.Wait()
	return errors.Join(errs...)
}
