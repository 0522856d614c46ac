package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/podpath/podpath/internal/dockercli"
	"github.com/podpath/podpath/sandbox/nodeimage"
)

// A probe channel is a long-lived exec in a node running podpath-agent
// (sandbox/nodeimage/files/agent; agentScript, a bash loop, in node images
// built before it): it
// reads probe commands one after another from its stdin and answers each
// with the exit code and both outputs. A check then costs a write and a read
// on an open connection instead of an exec (two Engine API requests and a
// process set up by the runtime). Its stdin is the exec's pipe from the
// Docker engine, as any exec's is: a learner's processes can reach it no
// more easily than they can reach an exec.
//
// Protocol, one request at a time:
//
//	podpath -> node:  "<id> <timeout seconds> <script bytes>\n" <script>
//	node -> podpath:  "<id> <exit code> <stdout bytes> <stderr bytes>\n" <stdout> <stderr>
//
// Each output is cut at agentMaxOutput bytes in the node (head -c), so a
// probe of /dev/zero costs the node a pipe, not memory.
const agentScript = `export LC_ALL=C
d=$(mktemp -d /run/podpath-probe.XXXXXX) || exit 1
trap 'rm -rf "$d"' EXIT
cd "$d" || exit 1
echo podpath-agent-ready
while read -r id secs n; do
  IFS= read -r -d '' -N "$n" script
  timeout -s KILL "$secs" bash -c "$script" </dev/null 2> >(head -c ` + agentMaxOutputStr + ` >err) | head -c ` + agentMaxOutputStr + ` >out
  code=${PIPESTATUS[0]}
  wait $! 2>/dev/null
  set -- $(stat -c %s out err)
  printf '%s %s %s %s\n' "$id" "$code" "$1" "$2"
  cat out err
done`

// agentMaxOutput is one byte past the grader's bound, so the grader can tell
// a cut output from one of exactly its size.
const (
	agentMaxOutput    = 1<<20 + 1
	agentMaxOutputStr = "1048577"
	agentsPerNode     = 3
)

type agent struct {
	tty  io.ReadWriteCloser
	r    *bufio.Reader
	dead bool
}

// ProbeChannels keeps one node's probe channels: idle ones are reused, at
// most agentsPerNode run at once, and one that fails is dropped (the next
// request starts a fresh one). Each backend starts them its own way: the
// Docker backend by an exec through the Engine API, the Kubernetes backend
// by an exec through the host's API server.
type ProbeChannels struct {
	start  PipeStarter
	mu     sync.Mutex
	idle   []*agent
	count  int
	freed  chan struct{}
	closed bool
	seq    int
}

// PipeStarter starts cmd in the node with its stdin and stdout as one
// stream; closing the stream closes the command's stdin and lets it go.
type PipeStarter func(ctx context.Context, cmd []string) (io.ReadWriteCloser, error)

// NewProbeChannels returns the probe channels of one node, started by start.
func NewProbeChannels(start PipeStarter) *ProbeChannels {
	return &ProbeChannels{start: start, freed: make(chan struct{}, agentsPerNode)}
}

var errAgentUnavailable = errors.New("the probe channels are closed")

func (t *Target) agentsFor(container string) *ProbeChannels {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.agents == nil {
		t.agents = map[string]*ProbeChannels{}
	}
	a := t.agents[container]
	if a == nil {
		a = NewProbeChannels(func(ctx context.Context, cmd []string) (io.ReadWriteCloser, error) {
			return dockercli.ExecPipe(ctx, container, cmd)
		})
		t.agents[container] = a
	}
	return a
}

// take returns an idle channel, starts one, or waits for one.
func (as *ProbeChannels) take(ctx context.Context) (*agent, error) {
	for {
		as.mu.Lock()
		if as.closed {
			as.mu.Unlock()
			return nil, errAgentUnavailable
		}
		if n := len(as.idle); n > 0 {
			a := as.idle[n-1]
			as.idle = as.idle[:n-1]
			as.mu.Unlock()
			return a, nil
		}
		if as.count < agentsPerNode {
			as.count++
			as.mu.Unlock()
			a, err := startAgent(ctx, as.start)
			if err != nil {
				as.mu.Lock()
				as.count--
				as.mu.Unlock()
				return nil, err
			}
			return a, nil
		}
		as.mu.Unlock()
		select {
		case <-as.freed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// give puts a channel back, or drops a dead one.
func (as *ProbeChannels) give(a *agent) {
	as.mu.Lock()
	if a.dead || as.closed {
		as.count--
		_ = a.tty.Close()
	} else {
		as.idle = append(as.idle, a)
	}
	as.mu.Unlock()
	select {
	case as.freed <- struct{}{}:
	default:
	}
}

// Close ends the idle channels; channels in use end when their command
// returns, and nothing starts again.
func (as *ProbeChannels) Close() {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.closed = true
	for _, a := range as.idle {
		_ = a.tty.Close()
	}
	as.idle = nil
}

func startAgent(ctx context.Context, start PipeStarter) (*agent, error) {
	// podpath-agent where the node image has it (one fork per probe), the
	// bash loop in older images
	tty, err := start(ctx, []string{"sh", "-c",
		`[ -x ` + nodeimage.AgentPath + ` ] && exec ` + nodeimage.AgentPath + ` ` + agentMaxOutputStr + `; exec bash -c "$0"`, agentScript})
	if err != nil {
		return nil, err
	}
	a := &agent{tty: tty, r: bufio.NewReaderSize(tty, 64<<10)}
	line, err := a.r.ReadString('\n')
	if err != nil || line != "podpath-agent-ready\n" {
		_ = tty.Close()
		return nil, fmt.Errorf("start a probe channel: %q %v", line, err)
	}
	return a, nil
}

// run sends one command and reads its answer. Any failure kills the
// channel: its stream may be out of step.
func (a *agent) run(ctx context.Context, id int, cmd string, stdout, stderr io.Writer) (int, error) {
	secs := 600.0
	if dl, ok := ctx.Deadline(); ok {
		secs = time.Until(dl).Seconds()
		if secs <= 0 {
			return -1, context.DeadlineExceeded
		}
	}
	stop := context.AfterFunc(ctx, func() { _ = a.tty.Close() })
	defer stop()
	fail := func(err error) (int, error) {
		a.dead = true
		if ctx.Err() != nil {
			return -1, ctx.Err()
		}
		return -1, err
	}
	if _, err := fmt.Fprintf(a.tty, "%d %.3f %d\n%s", id, secs, len(cmd), cmd); err != nil {
		return fail(err)
	}
	line, err := a.r.ReadString('\n')
	if err != nil {
		return fail(fmt.Errorf("probe channel: %w", err))
	}
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != strconv.Itoa(id) {
		return fail(fmt.Errorf("probe channel answered %q to request %d", line, id))
	}
	code, err1 := strconv.Atoi(f[1])
	nout, err2 := strconv.ParseInt(f[2], 10, 64)
	nerr, err3 := strconv.ParseInt(f[3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return fail(fmt.Errorf("probe channel answered %q", line))
	}
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	if _, err := io.CopyN(stdout, a.r, nout); err != nil {
		return fail(err)
	}
	if _, err := io.CopyN(stderr, a.r, nerr); err != nil {
		return fail(err)
	}
	if code == 137 && ctx.Err() == nil {
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < 100*time.Millisecond {
			return -1, context.DeadlineExceeded // the agent's timeout fired first
		}
	}
	return code, nil
}

// agentExec runs a bash script (cmd is bash -c SCRIPT) through the node's
// probe channel. sent says the request went out: from then on the command
// may have run, so a failure is not retried another way.
func (t *Target) agentExec(ctx context.Context, n Node, script string, stdout, stderr io.Writer) (code int, sent bool, err error) {
	return t.agentsFor(n.Container).Run(ctx, script, stdout, stderr)
}

// Run runs a bash script through one of the node's probe channels. sent
// says the request went out: from then on the script may have run, so a
// failure is not retried another way; before it (no channel could start),
// the caller may run the script by an exec.
func (as *ProbeChannels) Run(ctx context.Context, script string, stdout, stderr io.Writer) (code int, sent bool, err error) {
	a, err := as.take(ctx)
	if err != nil {
		return -1, ctx.Err() != nil, err
	}
	defer as.give(a)
	as.mu.Lock()
	as.seq++
	id := as.seq
	as.mu.Unlock()
	code, err = a.run(ctx, id, script, stdout, stderr)
	return code, true, err
}

// Close ends the target's probe channels.
func (t *Target) Close() {
	t.mu.Lock()
	all := t.agents
	t.agents = nil
	t.mu.Unlock()
	for _, a := range all {
		a.Close()
	}
}
