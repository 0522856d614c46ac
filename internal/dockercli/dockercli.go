// Package dockercli runs the docker CLI, the same way kind does, and turns its
// failures into errors that quote what docker said.
package dockercli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// Binary is the docker CLI to run.
var Binary = "docker"

// Output runs docker with args and returns its trimmed stdout.
func Output(ctx context.Context, args ...string) (string, error) {
	var out bytes.Buffer
	err := RunIO(ctx, nil, &out, nil, args...)
	return strings.TrimSpace(out.String()), err
}

// Run runs docker with args, discarding stdout.
func Run(ctx context.Context, args ...string) error {
	return RunIO(ctx, nil, io.Discard, nil, args...)
}

// RunIO runs docker with args and the given streams. stderr, when nil, is
// captured and quoted in the returned error.
func RunIO(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, args ...string) error {
	return runEnv(ctx, nil, stdin, stdout, stderr, args...)
}

// BuildLegacy builds tag from a Dockerfile given on stdin with no context,
// with the legacy builder: it needs no registry and no BuildKit, and can
// set what docker import and commit cannot (STOPSIGNAL).
func BuildLegacy(ctx context.Context, dockerfile, tag string) error {
	return runEnv(ctx, []string{"DOCKER_BUILDKIT=0"}, strings.NewReader(dockerfile), io.Discard, nil, "build", "--network", "none", "-t", tag, "-")
}

func runEnv(ctx context.Context, env []string, stdin io.Reader, stdout, stderr io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, Binary, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdin = stdin
	cmd.Stdout = stdout
	var errBuf bytes.Buffer
	if stderr == nil {
		cmd.Stderr = &errBuf
	} else {
		cmd.Stderr = io.MultiWriter(stderr, &errBuf)
	}
	if err := cmd.Run(); err != nil {
		return &Error{Args: args, Stderr: strings.TrimSpace(lastLines(errBuf.String(), 20)), Err: err}
	}
	return nil
}

// Error is a failed docker command.
type Error struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *Error) Error() string {
	cmd := "docker " + strings.Join(e.Args, " ")
	if len(cmd) > 160 {
		cmd = cmd[:160] + "..."
	}
	if e.Stderr != "" {
		return fmt.Sprintf("%s: %v: %s", cmd, e.Err, e.Stderr)
	}
	return fmt.Sprintf("%s: %v", cmd, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ExitCode is the exit code of a failed docker command, or -1.
func ExitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// ImageExists reports whether ref is in the local Docker engine.
func ImageExists(ctx context.Context, ref string) (bool, error) {
	out, err := Output(ctx, "image", "ls", "-q", ref)
	if err != nil {
		return false, err
	}
	return out != "", nil
}

// Ping fails with a sentence that says what to do when no engine answers.
func Ping(ctx context.Context) error {
	if _, err := exec.LookPath(Binary); err != nil {
		return fmt.Errorf("the docker CLI is not installed: install docker.io (apt-get install -y docker.io) or run scripts/quickstart")
	}
	if _, err := Output(ctx, "version", "--format", "{{.Server.Version}}"); err != nil {
		return fmt.Errorf("no Docker engine answers (%v): start dockerd (scripts/quickstart and scripts/test do it) and check `docker info`", err)
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
