// Package deploy_test proves the Kubernetes install end to end: a host
// cluster from scripts/kube-up, podpath from the Helm chart in deploy/chart,
// learners going through the server's API and terminals.
package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/podpath/podpath/internal/testenv"
)

const (
	e2eHost = "e2ehost" // PODPATH_KUBE_HOST: not the one an operator's kube-up makes
	e2ePort = "18090"   // PODPATH_KUBE_PORT
	e2eLab  = "yaml-to-process"
	labsNS  = "podpath-labs"
	appNS   = "podpath"
)

// TestKubernetesEndToEnd runs scripts/kube-up on this machine and uses the
// podpath it installs as two learners would: each signs in and starts a
// lab; their clusters are node Pods on the lab pool; one types in a
// terminal and passes a check; from its nodes, the other learner's nodes,
// the host's API server, Postgres and the server do not answer, while its
// own nodes and API server do; the replica holding its terminal is deleted
// and the terminal, its shell and Check go on through the other with
// nothing lost; ending the sessions deletes their Pods. scripts/kube-down
// removes it all at the end.
func TestKubernetesEndToEnd(t *testing.T) {
	testenv.NodeImage(t)
	if os.Geteuid() != 0 {
		testenv.Missing(t, "root: scripts/kube-up makes a host cluster and imports images into it")
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PODPATH_KUBE_HOST="+e2eHost, "PODPATH_KUBE_PORT="+e2ePort,
		"PODPATH_ADMIN_EMAIL=admin@e2e.podpath.local", "PODPATH_KUBE_HOST_KUBECONFIG="+filepath.Join(t.TempDir(), "host.kubeconfig"))
	script := func(name string) (string, error) {
		cmd := exec.Command(filepath.Join(repo, "scripts", name))
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout = io.MultiWriter(&out, os.Stderr) // its progress shows as it runs
		cmd.Stderr = cmd.Stdout
		err := cmd.Run()
		return out.String(), err
	}
	// A host left by an interrupted run would be reused: start from nothing.
	if out, err := script("kube-down"); err != nil {
		t.Fatalf("scripts/kube-down before the test: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if os.Getenv("PODPATH_KEEP_KUBE_HOST") == "true" {
			t.Logf("PODPATH_KEEP_KUBE_HOST=true: host cluster %s kept", e2eHost)
			return
		}
		if out, err := script("kube-down"); err != nil {
			t.Errorf("scripts/kube-down: %v\n%s", err, out)
		}
		if exec.Command("docker", "inspect", "podpath-"+e2eHost+"-control-plane").Run() == nil {
			t.Errorf("scripts/kube-down left the host's control plane container")
		}
	})

	start := time.Now()
	out, err := script("kube-up")
	if err != nil {
		t.Fatalf("scripts/kube-up: %v", err)
	}
	t.Logf("scripts/kube-up took %s", time.Since(start).Round(time.Second))
	m := regexp.MustCompile(`(?m)^podpath is running on Kubernetes: open (http://\S+)$`).FindStringSubmatch(out)
	if m == nil || !strings.HasSuffix(m[1], ":"+e2ePort) {
		t.Fatalf("kube-up printed no URL on port %s:\n%s", e2ePort, out)
	}
	adm := regexp.MustCompile(`(?m)^sign in as (\S+) with password (\S+) \(shown only now\)$`).FindStringSubmatch(out)
	if adm == nil || adm[1] != "admin@e2e.podpath.local" {
		t.Fatalf("kube-up printed no first admin:\n%s", out)
	}
	if !strings.Contains(out, "the host cluster's kubeconfig: ") {
		t.Fatalf("kube-up did not say where the kubeconfig is:\n%s", out)
	}
	base := "http://127.0.0.1:" + e2ePort
	h := &host{t: t, cp: "podpath-" + e2eHost + "-control-plane"}

	// The chart's shape on the host: two ready replicas, the trial
	// Postgres, the policy agent on both lab-pool workers.
	if got := h.kubectl("-n", appNS, "get", "deploy/podpath", "-o", "jsonpath={.status.readyReplicas}"); got != "2" {
		t.Fatalf("ready server replicas: %q, want 2", got)
	}
	if got := h.kubectl("-n", "kube-system", "get", "ds/podpath-policy-agent", "-o", "jsonpath={.status.numberReady}"); got != "2" {
		t.Fatalf("policy agents ready: %q, want 2 (one per lab-pool worker)", got)
	}
	pool := strings.Fields(h.kubectl("get", "nodes", "-l", "podpath.dev/lab-pool=true", "-o", "jsonpath={.items[*].metadata.name}"))
	if strings.Join(pool, " ") != "node01 node02" {
		t.Fatalf("lab pool nodes %v, want node01 node02", pool)
	}

	// The first admin kube-up printed signs in, and makes two learners.
	admin := login(t, base, adm[1], adm[2])
	if admin == nil {
		t.Fatalf("the admin kube-up printed cannot sign in")
	}
	ada, bob := h.learner(base, "ada"), h.learner(base, "bob")

	// Both start the lab at once, as a class does.
	created := time.Now()
	var sa, sb sessionView
	var wg sync.WaitGroup
	for _, p := range []struct {
		c *client
		s *sessionView
	}{{ada, &sa}, {bob, &sb}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.c.do("POST", "/api/labs/"+e2eLab+"/sessions", nil, http.StatusCreated, p.s)
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	sa, sb = ada.waitReady(sa.ID), bob.waitReady(sb.ID)
	t.Logf("two learner clusters ready through the server in %s", time.Since(created).Round(time.Second))

	// Their nodes are Pods on the lab pool's workers, each learner's on one.
	podsOf := func(s sessionView) map[string]pod {
		pods := map[string]pod{}
		for _, n := range s.Sandbox.Nodes {
			var p pod
			if err := json.Unmarshal([]byte(h.kubectl("-n", labsNS, "get", "pod", n.Container, "-o", "json")), &p); err != nil {
				t.Fatalf("node %s of %s is no Pod in %s: %v", n.Alias, s.Sandbox.Name, labsNS, err)
			}
			if p.Spec.NodeName != "node01" && p.Spec.NodeName != "node02" {
				t.Fatalf("Pod %s runs on %q, not on the lab pool", p.Metadata.Name, p.Spec.NodeName)
			}
			pods[n.Alias] = p
		}
		if len(pods) != 2 || pods["controlplane"].Spec.NodeName != pods["node01"].Spec.NodeName {
			t.Fatalf("%s: nodes %v, want controlplane and node01 on one pool node", s.Sandbox.Name, pods)
		}
		return pods
	}
	podsA, podsB := podsOf(sa), podsOf(sb)

	// Ada types into her control plane's terminal and passes the first step.
	tm := ada.terminal(sa.ID, "controlplane")
	tm.send("echo e2e-$((6*7))-marker; mv /etc/kubernetes/manifests/kube-scheduler.yaml /root/kube-scheduler.yaml\r")
	tm.waitFor("e2e-42-marker", time.Minute)
	var at attempt
	ada.do("POST", "/api/sessions/"+sa.ID+"/steps/stop-scheduler/check", nil, http.StatusOK, &at)
	if !at.Passed {
		t.Fatalf("the check after the terminal's command did not pass: %+v", at)
	}

	// What Ada's nodes reach. The targets are alive (each answers its own
	// side), so a refusal is the fence, not a dead address.
	apiHost := h.kubectl("get", "node", "controlplane", "-o", `jsonpath={.status.addresses[?(@.type=="InternalIP")].address}`)
	kubeSvc := h.kubectl("get", "svc", "kubernetes", "-o", "jsonpath={.spec.clusterIP}")
	pgSvc := h.kubectl("-n", appNS, "get", "svc", "podpath-postgres", "-o", "jsonpath={.spec.clusterIP}")
	pgPod := h.kubectl("-n", appNS, "get", "pod", "podpath-postgres-0", "-o", "jsonpath={.status.podIP}")
	webSvc := h.kubectl("-n", appNS, "get", "svc", "podpath", "-o", "jsonpath={.spec.clusterIP}")
	servers := h.serverPods()
	alive := map[string]string{
		"Postgres (its Service, from a server replica)": h.reachFromServer(servers[0].Metadata.Name, pgSvc, "5432"),
		"the server (its Service, from a replica)":      h.reachFromServer(servers[0].Metadata.Name, webSvc, "80"),
		"the other replica's port":                      h.reachFromServer(servers[0].Metadata.Name, servers[1].Status.PodIP, "8080"),
		"Bob's API server (from Bob's node01)":          h.reach(podsB["node01"], podsB["controlplane"].Status.PodIP, "6443"),
	}
	for what, got := range alive {
		if got != "open" {
			t.Fatalf("%s does not answer (%s): the fence checks below would prove nothing", what, got)
		}
	}
	cp, n1 := podsA["controlplane"], podsA["node01"]
	for _, c := range []struct {
		what, from string
		p          pod
		addr, port string
		want       string
	}{
		{"Ada's node01 kubelet", "controlplane", cp, n1.Status.PodIP, "10250", "open"},
		{"Ada's API server", "node01", n1, cp.Status.PodIP, "6443", "open"},
		{"Bob's API server", "controlplane", cp, podsB["controlplane"].Status.PodIP, "6443", "closed"},
		{"Bob's node01 kubelet", "node01", n1, podsB["node01"].Status.PodIP, "10250", "closed"},
		{"the host's API server (Service)", "controlplane", cp, kubeSvc, "443", "closed"},
		{"the host's API server (address)", "node01", n1, apiHost, "6443", "closed"},
		{"Postgres (Service)", "controlplane", cp, pgSvc, "5432", "closed"},
		{"Postgres (Pod)", "node01", n1, pgPod, "5432", "closed"},
		{"the server (Service)", "controlplane", cp, webSvc, "80", "closed"},
		{"a server replica's port", "node01", n1, servers[0].Status.PodIP, "8080", "closed"},
	} {
		if got := h.reach(c.p, c.addr, c.port); got != c.want {
			t.Errorf("from Ada's %s, %s (%s:%s) is %s, want %s", c.from, c.what, c.addr, c.port, got, c.want)
		}
	}

	// The replica that holds Ada's terminal is deleted mid-session.
	var holder string
	for _, s := range servers {
		for _, line := range strings.Split(h.kubectl("-n", appNS, "logs", s.Metadata.Name, "-c", "server"), "\n") {
			if strings.Contains(line, `"msg":"terminal opened"`) && strings.Contains(line, sa.ID) {
				holder = s.Metadata.Name
			}
		}
	}
	if holder == "" {
		t.Fatalf("no replica logged Ada's terminal as opened")
	}
	h.kubectl("-n", appNS, "delete", "pod", holder, "--wait=false")
	tm.waitClosed(time.Minute)
	t.Logf("deleted replica %s; its terminal closed", holder)

	// The page reconnects: through the Service, to a replica still up. The
	// shell is the one she left (the keeper in the node), its output
	// replayed, and it takes the next step's command.
	tm = ada.terminal(sa.ID, "controlplane")
	tm.waitFor("e2e-42-marker", 30*time.Second)
	tm.send("kubectl apply -f /root/web.yaml && echo applied-$((6*8))\r")
	tm.waitFor("applied-48", time.Minute)
	ada.do("POST", "/api/sessions/"+sa.ID+"/steps/apply/check", nil, http.StatusOK, &at)
	if !at.Passed {
		t.Fatalf("Check after the replica went did not pass: %+v", at)
	}
	var after sessionView
	ada.do("GET", "/api/sessions/"+sa.ID, nil, http.StatusOK, &after)
	for _, st := range after.Steps {
		if (st.ID == "stop-scheduler" || st.ID == "apply") && st.Status != "passed" {
			t.Fatalf("step %s is %s after the replica went, want passed (progress lost)", st.ID, st.Status)
		}
	}
	tm.close()

	// Ending a session deletes its Pods (and the other learner's stay until
	// theirs ends).
	ada.do("DELETE", "/api/sessions/"+sa.ID, nil, http.StatusNoContent, nil)
	h.waitGone(sa.Sandbox.Name, 3*time.Minute)
	if h.kubectl("-n", labsNS, "get", "pod", podsB["controlplane"].Metadata.Name, "-o", "jsonpath={.status.phase}") != "Running" {
		t.Fatalf("Bob's control plane is not running after Ada's session ended")
	}
	bob.do("DELETE", "/api/sessions/"+sb.ID, nil, http.StatusNoContent, nil)
	h.waitGone(sb.Sandbox.Name, 3*time.Minute)
	t.Logf("end to end, after kube-up: %s", time.Since(created).Round(time.Second))
}

type sessionView struct {
	ID      string
	Sandbox struct {
		Name  string
		State string
		Error *string
		Nodes []struct{ Alias, Container string }
	}
	Steps []struct{ ID, Status string }
}

type attempt struct {
	Passed  bool
	Results []struct {
		Passed   bool
		Observed string
	}
}

type pod struct {
	Metadata struct{ Name string }
	Spec     struct{ NodeName string }
	Status   struct {
		Phase string
		PodIP string
	}
}

// host runs kubectl in the host cluster's control plane container (the node
// image has it), as an operator on this machine would.
type host struct {
	t  *testing.T
	cp string
}

func (h *host) run(args ...string) (string, error) {
	cmd := exec.Command("docker", append([]string{"exec", h.cp, "kubectl", "--kubeconfig", "/etc/kubernetes/admin.conf"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return "", fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return strings.TrimSpace(out.String()), nil
}

func (h *host) kubectl(args ...string) string {
	h.t.Helper()
	out, err := h.run(args...)
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

// probe connects to addr:port with bash's /dev/tcp, 3 s at most: open when
// something accepted, closed otherwise.
const probe = `timeout 3 bash -c '</dev/tcp/%s/%s' >/dev/null 2>&1 && echo open || echo closed`

// reach says whether a learner node Pod connects to addr:port.
func (h *host) reach(p pod, addr, port string) string {
	h.t.Helper()
	return h.kubectl("-n", labsNS, "exec", p.Metadata.Name, "-c", "node", "--", "bash", "-c", fmt.Sprintf(probe, addr, port))
}

// reachFromServer says whether a server replica connects to addr:port.
func (h *host) reachFromServer(name, addr, port string) string {
	h.t.Helper()
	return h.kubectl("-n", appNS, "exec", name, "-c", "server", "--", "bash", "-c", fmt.Sprintf(probe, addr, port))
}

func (h *host) serverPods() []pod {
	h.t.Helper()
	var list struct{ Items []pod }
	if err := json.Unmarshal([]byte(h.kubectl("-n", appNS, "get", "pods", "-l", "app.kubernetes.io/component=server", "-o", "json")), &list); err != nil {
		h.t.Fatal(err)
	}
	var up []pod
	for _, p := range list.Items {
		if p.Status.Phase == "Running" && p.Status.PodIP != "" {
			up = append(up, p)
		}
	}
	if len(up) != 2 {
		h.t.Fatalf("%d running server replicas, want 2", len(up))
	}
	return up
}

// learner makes a learner account with the server's own CLI in a replica
// and signs in as it.
func (h *host) learner(base, name string) *client {
	h.t.Helper()
	email, password := name+"@e2e.podpath.local", "e2e-"+name+"-password"
	h.kubectl("-n", appNS, "exec", "deploy/podpath", "-c", "server", "--",
		"env", "PODPATH_PASSWORD="+password, "podpath", "user", "create", "--email", email, "--name", name)
	c := login(h.t, base, email, password)
	if c == nil {
		h.t.Fatalf("%s cannot sign in", email)
	}
	return c
}

// waitGone waits until the host has no Pod of the sandbox left.
func (h *host) waitGone(sandbox string, timeout time.Duration) {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		names := h.kubectl("-n", labsNS, "get", "pods", "-o", "jsonpath={.items[*].metadata.name}")
		left := 0
		for _, n := range strings.Fields(names) {
			if strings.HasPrefix(n, sandbox+"-") {
				left++
			}
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%d Pods of %s left %s after its session ended: %s", left, sandbox, timeout, names)
		}
		time.Sleep(2 * time.Second)
	}
}

type client struct {
	t     *testing.T
	base  string
	token string
}

func login(t *testing.T, base, email, password string) *client {
	t.Helper()
	c := &client{t: t, base: base}
	var res struct{ Token string }
	body, _ := json.Marshal(map[string]string{"email": email, "password": password})
	req, _ := http.NewRequest("POST", base+"/api/login", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK {
		return nil
	}
	if err := json.NewDecoder(r.Body).Decode(&res); err != nil || res.Token == "" {
		t.Fatalf("login answer: %v", err)
	}
	c.token = res.Token
	return c
}

// do sends a request and decodes the answer into out; any status but want
// fails the test.
func (c *client) do(method, path string, in any, want int, out any) {
	c.t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, c.base+path, body)
	req.Header.Set("Authorization", "Bearer "+c.token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Errorf("%s %s: %v", method, path, err)
		return
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	if r.StatusCode != want {
		c.t.Errorf("%s %s: %d %s, want %d", method, path, r.StatusCode, b, want)
		return
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Errorf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

// waitReady polls the session until its cluster is ready.
func (c *client) waitReady(id string) sessionView {
	c.t.Helper()
	deadline := time.Now().Add(8 * time.Minute)
	for {
		var s sessionView
		c.do("GET", "/api/sessions/"+id, nil, http.StatusOK, &s)
		if c.t.Failed() {
			c.t.FailNow()
		}
		switch s.Sandbox.State {
		case "ready":
			return s
		case "failed":
			c.t.Fatalf("session %s: its cluster failed: %v", id, deref(s.Sandbox.Error))
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("session %s: cluster still %s after 8 minutes", id, s.Sandbox.State)
		}
		time.Sleep(3 * time.Second)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

type term struct {
	t    *testing.T
	conn *websocket.Conn
	out  chan []byte
	buf  strings.Builder
}

// terminal opens a node's terminal as the lab page does (same origin,
// signed in); a server that is shutting down may refuse it, so it tries
// for a while.
func (c *client) terminal(id, node string) *term {
	c.t.Helper()
	h := http.Header{}
	h.Set("Authorization", "Bearer "+c.token)
	h.Set("Origin", c.base)
	u := "ws" + strings.TrimPrefix(c.base, "http") + "/api/sessions/" + id + "/terminal/" + node + "?cols=120&rows=30"
	deadline := time.Now().Add(time.Minute)
	for {
		conn, res, err := websocket.DefaultDialer.Dial(u, h)
		if err == nil {
			tm := &term{t: c.t, conn: conn, out: make(chan []byte, 256)}
			go func() {
				defer close(tm.out)
				for {
					kind, b, err := conn.ReadMessage()
					if err != nil {
						return
					}
					if kind == websocket.BinaryMessage {
						tm.out <- b
					}
				}
			}()
			return tm
		}
		if time.Now().After(deadline) {
			status := 0
			if res != nil {
				status = res.StatusCode
			}
			c.t.Fatalf("terminal %s of %s: %v (status %d)", node, id, err, status)
		}
		time.Sleep(time.Second)
	}
}

func (tm *term) send(s string) {
	tm.t.Helper()
	if err := tm.conn.WriteMessage(websocket.BinaryMessage, []byte(s)); err != nil {
		tm.t.Fatal(err)
	}
}

func (tm *term) waitFor(want string, timeout time.Duration) {
	tm.t.Helper()
	deadline := time.After(timeout)
	for !strings.Contains(tm.buf.String(), want) {
		select {
		case b, ok := <-tm.out:
			if !ok {
				tm.t.Fatalf("terminal closed before %q appeared; output:\n%s", want, tm.buf.String())
			}
			tm.buf.Write(b)
		case <-deadline:
			tm.t.Fatalf("no %q in the terminal within %s; output:\n%s", want, timeout, tm.buf.String())
		}
	}
}

func (tm *term) waitClosed(timeout time.Duration) {
	tm.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case _, ok := <-tm.out:
			if !ok {
				return
			}
		case <-deadline:
			tm.t.Fatalf("the terminal of the deleted replica is still open after %s", timeout)
		}
	}
}

func (tm *term) close() { tm.conn.Close() }
