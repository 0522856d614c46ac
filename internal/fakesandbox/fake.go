// Package fakesandbox is a sandbox manager that misbehaves on cue: creates
// that hang like kind's (which ignores its context), a Docker engine that
// stops answering, node containers that exit. It sits behind the session
// engine's Sandboxes seam so the engine's fault handling can be tested in
// seconds; the real-cluster tests in server/ and sandbox/ cover the rest.
package fakesandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/server/terminal"
	"github.com/podpath/podpath/session"
)

// ErrDockerDown is what every call returns while Down is set.
var ErrDockerDown = errors.New("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?")

// Fake is an in-memory sandbox manager.
type Fake struct {
	mu       sync.Mutex
	clusters map[string][]sandbox.Node
	creates  []string
	deletes  []string
	gate     chan struct{}
	down     bool
	execs    map[string][]string
	ports    map[int]string
	// CreateTime is how long a create takes (default 10 ms).
	CreateTime time.Duration
}

// New returns an empty fake.
func New() *Fake {
	return &Fake{clusters: map[string][]sandbox.Node{}, execs: map[string][]string{}, CreateTime: 10 * time.Millisecond}
}

var _ session.Sandboxes = (*Fake)(nil)

// Hold makes creates wait, whatever their context says, until Release.
func (f *Fake) Hold() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gate == nil {
		f.gate = make(chan struct{})
	}
}

// Release lets held creates finish.
func (f *Fake) Release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gate != nil {
		close(f.gate)
		f.gate = nil
	}
}

// SetDown makes Docker stop (true) or start (false) answering.
func (f *Fake) SetDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

// SetNodeState sets a node container's Docker state (running, exited, ...).
func (f *Fake) SetNodeState(name, alias, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.clusters[name] {
		if f.clusters[name][i].Alias == alias {
			f.clusters[name][i].State = state
		}
	}
}

// Creates lists the names created so far, in order (including held ones).
func (f *Fake) Creates() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.creates...)
}

// Deletes lists the names deleted so far.
func (f *Fake) Deletes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.deletes...)
}

// Clusters lists the clusters that exist.
func (f *Fake) Clusters() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for n := range f.clusters {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (f *Fake) check() error {
	if f.down {
		return ErrDockerDown
	}
	return nil
}

// Create makes a cluster of one control plane and spec.Workers workers.
func (f *Fake) Create(ctx context.Context, spec sandbox.Spec, progress func(sandbox.Event)) (*sandbox.Info, error) {
	f.mu.Lock()
	if err := f.check(); err != nil {
		f.mu.Unlock()
		return nil, err
	}
	if _, ok := f.clusters[spec.Name]; ok {
		f.mu.Unlock()
		return nil, fmt.Errorf("sandbox %q already exists", spec.Name)
	}
	f.creates = append(f.creates, spec.Name)
	gate := f.gate
	f.mu.Unlock()
	if progress != nil {
		progress(sandbox.Event{Stage: sandbox.StageNodes, Title: sandbox.StageTitles[sandbox.StageNodes]})
	}
	if gate != nil {
		<-gate // like kind's Create: no context
	}
	time.Sleep(f.CreateTime)
	if ctx.Err() != nil {
		return nil, ctx.Err() // and, like sandbox.Manager, nothing is left
	}
	nodes := []sandbox.Node{{Alias: sandbox.ControlPlane, Container: spec.Name + "-control-plane", Role: "control-plane", State: "running"}}
	for i := 1; i <= spec.Workers; i++ {
		nodes = append(nodes, sandbox.Node{Alias: sandbox.WorkerAlias(i), Container: fmt.Sprintf("%s-worker%d", spec.Name, i), Role: "worker", State: "running"})
	}
	f.mu.Lock()
	f.clusters[spec.Name] = nodes
	f.mu.Unlock()
	if progress != nil {
		progress(sandbox.Event{Stage: sandbox.StageNodes, Title: sandbox.StageTitles[sandbox.StageNodes], Done: true})
	}
	return &sandbox.Info{Name: spec.Name, Nodes: append([]sandbox.Node(nil), nodes...), State: sandbox.StateRunning}, nil
}

// Delete removes a cluster; a missing one is no error.
func (f *Fake) Delete(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return err
	}
	delete(f.clusters, name)
	f.deletes = append(f.deletes, name)
	return nil
}

// Get describes a cluster.
func (f *Fake) Get(ctx context.Context, name string) (*sandbox.Info, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return nil, err
	}
	nodes, ok := f.clusters[name]
	if !ok {
		return nil, fmt.Errorf("sandbox %s: %w", name, sandbox.ErrNotFound)
	}
	return &sandbox.Info{Name: name, Nodes: append([]sandbox.Node(nil), nodes...), State: sandbox.StateOf(nodes)}, nil
}

func (f *Fake) setAll(name, from, to string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return err
	}
	nodes, ok := f.clusters[name]
	if !ok {
		return fmt.Errorf("sandbox %s: %w", name, sandbox.ErrNotFound)
	}
	for i := range nodes {
		if nodes[i].State == from {
			nodes[i].State = to
		}
	}
	return nil
}

// Hibernate freezes the nodes.
func (f *Fake) Hibernate(ctx context.Context, name string) error {
	return f.setAll(name, "running", "paused")
}

// Resume thaws them.
func (f *Fake) Resume(ctx context.Context, name string) error {
	return f.setAll(name, "paused", "running")
}

// WaitReady returns at once for a running cluster.
func (f *Fake) WaitReady(ctx context.Context, name string, timeout time.Duration) error {
	info, err := f.Get(ctx, name)
	if err != nil {
		return err
	}
	if info.State != sandbox.StateRunning {
		return fmt.Errorf("sandbox %s is %s", name, info.State)
	}
	return nil
}

// WaitAPI returns at once for a running cluster.
func (f *Fake) WaitAPI(ctx context.Context, name string, timeout time.Duration) error {
	return f.WaitReady(ctx, name, timeout)
}

// Reconcile returns the clusters known does not name.
func (f *Fake) Reconcile(ctx context.Context, known []string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, k := range known {
		want[k] = true
	}
	var out []string
	for n := range f.clusters {
		if !want[n] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Target is a node whose commands all succeed with no output; nothing runs
// on this machine. The fake keeps each command (Execs), so a test sees what
// the engine ran: a lab's setup as a session's values filled it.
func (f *Fake) Target(name string) session.Target { return target{f: f, cluster: name} }

// Execs returns the commands run on cluster's nodes, as "node: arg arg".
func (f *Fake) Execs(cluster string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.execs[cluster]...)
}

type target struct {
	f       *Fake
	cluster string
}

func (t target) Exec(ctx context.Context, node string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	t.f.mu.Lock()
	t.f.execs[t.cluster] = append(t.f.execs[t.cluster], node+": "+strings.Join(cmd, " "))
	t.f.mu.Unlock()
	return 0, ctx.Err()
}

func (target) RESTConfig(ctx context.Context) (*rest.Config, error) {
	return nil, errors.New("the fake sandbox has no API server")
}

// Close has nothing to end.
func (target) Close() {}

// Foreground cannot tell: the fake's shell has no keeper.
func (target) Foreground(ctx context.Context, node string) (string, error) {
	return "", errors.New("the fake sandbox's shell has no keeper")
}

// SetPort makes port, on every node of every cluster, reach addr (a
// server of the test's): the traffic proxy's tests need an app to talk to.
func (f *Fake) SetPort(port int, addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ports == nil {
		f.ports = map[int]string{}
	}
	f.ports[port] = addr
}

// Dial reaches what SetPort named; otherwise nothing: the fake's nodes
// have no network.
func (t target) Dial(ctx context.Context, node string, port int) (net.Conn, error) {
	t.f.mu.Lock()
	addr, ok := t.f.ports[port]
	t.f.mu.Unlock()
	if !ok {
		return nil, errors.New("the fake sandbox's nodes have no network")
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// Watch cannot share the fake's shell: it has no keeper.
func (target) Watch(ctx context.Context, node string, control bool, cols, rows uint16) (session.TTY, error) {
	return nil, errors.New("the fake sandbox's shell has no keeper")
}

// WindowSize cannot tell: the fake's shell has no keeper.
func (target) WindowSize(ctx context.Context, node string) (uint16, uint16, error) {
	return 0, 0, errors.New("the fake sandbox's shell has no keeper")
}

// Attach runs /bin/sh on this machine under a pty.
func (target) Attach(ctx context.Context, node string, cols, rows uint16) (session.TTY, error) {
	return terminal.StartProcess(exec.Command("/bin/sh"), cols, rows)
}
