package sandbox_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/sandbox/nodeimage"
)

// imagesEnterANode proves a node's containerd takes images that are not
// preloaded: one a Pod pulls from a real registry (go-containerregistry's,
// started here on the host), one imported with `ctr images import`. Each
// carries a layer of its own, so containerd must write new blobs next to the
// preloaded ones linked from the node image (a blobs folder linked whole
// failed every commit: invalid cross-device link).
func imagesEnterANode(t *testing.T, m *sandbox.Manager, sb string, client kubernetes.Interface) {
	ctx := context.Background()
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0)))}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port

	// The tools image as the node has it, plus a layer with a file only
	// this run knows.
	dir := t.TempDir()
	saved := filepath.Join(dir, "tools.tar")
	run(t, m, sb, "controlplane", "ctr -n k8s.io images export --local --platform linux/amd64 /tmp/tools.tar "+nodeimage.ToolsImage)
	f, err := os.Create(saved)
	if err != nil {
		t.Fatal(err)
	}
	code, err := m.Exec(ctx, sb, "controlplane", []string{"sh", "-c", "cat /tmp/tools.tar && rm /tmp/tools.tar"}, nil, f, nil)
	f.Close()
	if err != nil || code != 0 {
		t.Fatalf("read the exported tools image: exit %d, %v", code, err)
	}
	tag, err := name.NewTag(nodeimage.ToolsImage)
	if err != nil {
		t.Fatal(err)
	}
	base, err := tarball.ImageFromPath(saved, &tag)
	if err != nil {
		t.Fatal(err)
	}
	withNonce := func() (v1.Image, string) {
		b := make([]byte, 8)
		rand.Read(b)
		nonce := hex.EncodeToString(b)
		layer, err := fileLayer("podpath-nonce", []byte(nonce+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := mutate.AppendLayers(base, layer)
		if err != nil {
			t.Fatal(err)
		}
		return img, nonce
	}

	// The registry as the node reaches the host: its network's gateway.
	gw := run(t, m, sb, "node01", "ip route show default | awk '{print $3; exit}'")
	if net.ParseIP(gw) == nil {
		t.Fatalf("node01's default gateway: %q", gw)
	}
	host := fmt.Sprintf("%s:%d", gw, port)
	pushed, nonce := withNonce()
	ref, err := name.ParseReference(fmt.Sprintf("127.0.0.1:%d/podpath/pulled:%s", port, nonce[:8]), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, pushed); err != nil {
		t.Fatalf("push to the test registry: %v", err)
	}
	// The registry speaks plain HTTP: say so in the node's containerd
	// hosts configuration (/etc/containerd/certs.d, read at each pull).
	run(t, m, sb, "node01", fmt.Sprintf(`mkdir -p /etc/containerd/certs.d/%[1]s && printf 'server = "http://%[1]s"\n[host."http://%[1]s"]\n  capabilities = ["pull", "resolve"]\n' > /etc/containerd/certs.d/%[1]s/hosts.toml`, host))

	image := fmt.Sprintf("%s/podpath/pulled:%s", host, nonce[:8])
	pod := toolsPod("pulled", "node01")
	pod.Spec.Containers[0].Image = image
	pod.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
	pod.Spec.Containers[0].Command = []string{"sh", "-c", "cat /podpath-nonce; sleep infinity"}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRunningOrSay(t, m, sb, client, "pulled")
	if logs := podLogs(t, client, "pulled"); logs != nonce {
		t.Errorf("the pulled image's container printed %q, want %q", logs, nonce)
	}
	if out := run(t, m, sb, "node01", "crictl images -o json | jq -r '.images[].repoTags[]?'"); !strings.Contains(out, image) {
		t.Errorf("crictl images on node01 does not list %s:\n%s", image, out)
	}

	// An image tarball imported with ctr, as a learner or a lab would.
	imported, nonce2 := withNonce()
	tag, err = name.NewTag("podpath.local/imported:" + nonce2[:8])
	if err != nil {
		t.Fatal(err)
	}
	var tarBytes bytes.Buffer
	if err := tarball.Write(tag, imported, &tarBytes); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code, err = m.Exec(ctx, sb, "node01", []string{"ctr", "-n", "k8s.io", "images", "import", "-"}, &tarBytes, &out, &out)
	if err != nil || code != 0 {
		t.Fatalf("ctr images import on node01: exit %d, %v: %s", code, err, out.String())
	}
	pod = toolsPod("imported", "node01")
	pod.Spec.Containers[0].Image = tag.String()
	pod.Spec.Containers[0].Command = []string{"sh", "-c", "cat /podpath-nonce; sleep infinity"}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRunningOrSay(t, m, sb, client, "imported")
	if logs := podLogs(t, client, "imported"); logs != nonce2 {
		t.Errorf("the imported image's container printed %q, want %q", logs, nonce2)
	}
	// The preloaded images are still linked from the node image, not copied.
	if out := run(t, m, sb, "node01", `find /var/lib/containerd/io.containerd.content.v1.content/blobs/sha256 -type l | wc -l`); out == "0" {
		t.Error("no blob of node01's containerd is linked to the node image: the preloaded images were copied")
	}
}

// waitRunningOrSay waits for a Pod to run, and on failure says why from
// its events and kubelet's view.
func waitRunningOrSay(t *testing.T, m *sandbox.Manager, sb string, client kubernetes.Interface, pod string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		p, err := client.CoreV1().Pods("default").Get(context.Background(), pod, metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning {
			return
		}
		time.Sleep(time.Second)
	}
	events := run(t, m, sb, "controlplane", "kubectl --kubeconfig /etc/kubernetes/admin.conf get events --field-selector involvedObject.name="+pod+" -o custom-columns=REASON:.reason,MESSAGE:.message")
	t.Fatalf("pod %s is not Running after 2 minutes; its events:\n%s", pod, events)
}

// fileLayer is an image layer holding one file.
func fileLayer(path string, data []byte) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: path, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		return nil, err
	}
	tw.Write(data)
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
}

func podLogs(t *testing.T, client kubernetes.Interface, pod string) string {
	t.Helper()
	for range 30 {
		b, err := client.CoreV1().Pods("default").GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(context.Background())
		if err == nil && len(bytes.TrimSpace(b)) > 0 {
			return strings.TrimSpace(string(b))
		}
		time.Sleep(time.Second)
	}
	return ""
}
