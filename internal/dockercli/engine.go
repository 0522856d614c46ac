package dockercli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
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

// Container is what the learner's path needs to know of a container.
type Container struct {
	ID     string
	Name   string
	State  string // running, paused, exited, ...
	Labels map[string]string
	IPs    []string // one per network
	// Published maps a container port ("6443/tcp") to where the host
	// publishes it ("127.0.0.1:40123").
	Published map[string]string
}

// Containers lists the containers (running or not) that carry label=value.
func Containers(ctx context.Context, label, value string) ([]Container, error) {
	c, err := Engine()
	if err != nil {
		return nil, err
	}
	list, err := c.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label+"="+value))})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	out := make([]Container, 0, len(list))
	for _, ct := range list {
		name := ""
		if len(ct.Names) > 0 {
			name = strings.TrimPrefix(ct.Names[0], "/")
		}
		co := Container{ID: ct.ID, Name: name, State: ct.State, Labels: ct.Labels}
		for _, p := range ct.Ports {
			if p.PublicPort == 0 {
				continue
			}
			if co.Published == nil {
				co.Published = map[string]string{}
			}
			ip := p.IP
			if ip == "" || ip == "0.0.0.0" || ip == "::" {
				ip = "127.0.0.1"
			}
			co.Published[fmt.Sprintf("%d/%s", p.PrivatePort, p.Type)] = net.JoinHostPort(ip, strconv.Itoa(int(p.PublicPort)))
		}
		if ct.NetworkSettings != nil {
			nets := make([]string, 0, len(ct.NetworkSettings.Networks))
			for n := range ct.NetworkSettings.Networks {
				nets = append(nets, n)
			}
			sort.Strings(nets)
			for _, n := range nets {
				if ip := ct.NetworkSettings.Networks[n].IPAddress; ip != "" {
					co.IPs = append(co.IPs, ip)
				}
			}
		}
		out = append(out, co)
	}
	return out, nil
}

// Pipe is a long-lived process in a container with its stdin and stdout
// (no terminal): what is written goes to its stdin, what it prints on
// stdout is read. Its stderr is dropped.
type Pipe struct {
	resp io.Closer
	w    io.Writer
	r    *io.PipeReader
	once sync.Once
}

// ExecPipe starts cmd in a container with stdin and stdout attached.
func ExecPipe(ctx context.Context, containerID string, cmd []string) (*Pipe, error) {
	c, err := Engine()
	if err != nil {
		return nil, err
	}
	created, err := c.ContainerExecCreate(ctx, containerID, container.ExecOptions{
		Cmd: cmd, AttachStdin: true, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return nil, engineError("exec in "+containerID, err)
	}
	resp, err := c.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, engineError("exec in "+containerID, err)
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, io.Discard, resp.Reader)
		if err == nil {
			err = io.EOF
		}
		pw.CloseWithError(err)
	}()
	return &Pipe{resp: resp.Conn, w: resp.Conn, r: pr}, nil
}

func (p *Pipe) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p *Pipe) Write(b []byte) (int, error) { return p.w.Write(b) }

// Close ends the connection; the process reads EOF on its stdin.
func (p *Pipe) Close() error {
	p.once.Do(func() {
		_ = p.resp.Close()
		_ = p.r.Close()
	})
	return nil
}
