package nodeimage

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/podpath/podpath/internal/dockercli"
)

// importRootfs streams root into the Docker engine as an image.
func (b *builder) importRootfs(ctx context.Context, root, ref string) error {
	pr, pw := io.Pipe()
	go func() {
		t := newTarWriter(pw)
		err := t.addTree(root, nil)
		if err == nil {
			err = t.Close()
		}
		pw.CloseWithError(err)
	}()
	err := dockercli.RunIO(ctx, pr, io.Discard, nil, "import", "--change", "ENV container=docker", "-", ref)
	pr.Close()
	if err != nil {
		return fmt.Errorf("docker import of the node root filesystem: %w", err)
	}
	return nil
}

// preload imports the image archive into the node's containerd (namespace
// k8s.io, where the CRI plugin looks) inside a container of the imported
// image, unpacks every image into containerd's overlayfs snapshots, pins the
// images so kubelet's image GC keeps them, and commits.
//
// Unpacked at build, a node's first Pods start without containerd
// decompressing their layers on a busy node (12 s each for the worker's
// flannel and kube-proxy before; docs/PERFORMANCE.md). The snapshots are
// made on a volume (overlayfs cannot be its upper layer), then copied into
// the container's root filesystem for the commit, at SeedDir rather than
// /var/lib/containerd: kind mounts a fresh volume at /var, and Docker's copy of
// an image's /var into it took 10 s a node for these 830 MB (and a cp of them
// at boot 7 s, two nodes at once). So at first boot podpath-node-setup copies
// only containerd's small state into /var/lib/containerd and links each
// snapshot and each blob to the seed in the image: a committed snapshot is
// only ever an overlay lower layer, which may sit on Docker's overlayfs,
// read-only to the node and shared (page cache too) by every node of the
// host, while the containers' upper layers are made on /var as before. A
// snapshot with a whiteout (a 0:0 character device) is the exception:
// Docker's overlay2 would take the device for its own, so the build stores
// each as an empty file, lists it in podpath-whiteouts and the snapshot in
// podpath-copied-snapshots, and the setup copies those few snapshots to /var
// and makes the files whiteouts again.
func (b *builder) preload(ctx context.Context, rootImage, archive, committed string, refs []string) (err error) {
	name := "podpath-nodeimage-preload-" + fmt.Sprint(time.Now().UnixNano())
	if err := dockercli.Run(ctx, "run", "-d", "--name", name, "--privileged",
		"--entrypoint", "/bin/sleep",
		"-v", archive+":/preload/images.tar:ro",
		"-v", "/preload/state",
		rootImage, "infinity"); err != nil {
		return fmt.Errorf("start the preload container: %w", err)
	}
	defer func() {
		_ = dockercli.Run(context.WithoutCancel(ctx), "rm", "-f", "-v", name)
	}()
	exec := func(args ...string) error {
		return dockercli.Run(ctx, append([]string{"exec", name}, args...)...)
	}
	output := func(args ...string) (string, error) {
		return dockercli.Output(ctx, append([]string{"exec", name}, args...)...)
	}
	const root = "/preload/state/containerd"
	ctr := func(args ...string) []string {
		return append([]string{"ctr", "-n", "k8s.io"}, args...)
	}
	if err := dockercli.Run(ctx, "exec", "-d", name, "sh", "-c",
		"exec /usr/local/bin/containerd --root "+root+" >/preload/state/containerd.log 2>&1"); err != nil {
		return fmt.Errorf("start containerd to preload images: %w", err)
	}
	ready := false
	for range 60 {
		if exec("ctr", "version") == nil {
			ready = true
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !ready {
		logs, _ := output("tail", "-n", "20", "/preload/state/containerd.log")
		return fmt.Errorf("containerd did not start in the preload container:\n%s", logs)
	}
	if err := exec(ctr("images", "import", "--all-platforms", "/preload/images.tar")...); err != nil {
		return fmt.Errorf("ctr images import: %w", err)
	}
	listed, err := output(ctr("images", "ls", "-q")...)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, r := range strings.Fields(listed) {
		have[r] = true
	}
	for _, r := range refs {
		if !have[r] {
			return fmt.Errorf("image %s is missing from the node's containerd after import (have: %s)", r, strings.Join(strings.Fields(listed), ", "))
		}
		if err := exec(ctr("images", "label", r, "io.cri-containerd.pinned=pinned")...); err != nil {
			return err
		}
		// The import unpacked it; "images usage" fails unless the image's
		// layers are all snapshots in overlayfs, as a pull leaves them.
		if _, err := output(ctr("images", "usage", "--snapshotter", "overlayfs", r)...); err != nil {
			return fmt.Errorf("%s is not unpacked in the node's containerd: %w", r, err)
		}
	}
	b.detail("preload: %d images in the node's containerd, unpacked and pinned", len(refs))
	if err := exec("sh", "-c", `pkill -x containerd; for i in $(seq 100); do pgrep -x containerd >/dev/null || exit 0; sleep 0.1; done; echo containerd did not stop >&2; exit 1`); err != nil {
		return fmt.Errorf("stop the preload containerd: %w", err)
	}
	if err := exec("sh", "-c", encodeWhiteouts, "sh", root, SeedDir); err != nil {
		return fmt.Errorf("copy the unpacked images into the node: %w", err)
	}
	n, err := output("sh", "-c", `tr -cd '\0' < `+SeedDir+`/podpath-whiteouts | wc -c`)
	if err != nil {
		return err
	}
	b.detail("preload: %s overlay whiteouts stored as files, listed in %s/podpath-whiteouts", strings.TrimSpace(n), SeedDir)
	if err := dockercli.Run(ctx, "stop", "-t", "1", name); err != nil {
		return err
	}
	if err := dockercli.Run(ctx, "commit", name, committed); err != nil {
		return fmt.Errorf("commit the preloaded node: %w", err)
	}
	return nil
}

// SeedDir is where the node image keeps its containerd root, images
// unpacked, in three parts: root (containerd's state without its snapshots
// and blobs: a few MB), snapshots (one directory per unpacked layer) and
// blobs (the compressed layers). podpath-node-setup makes
// /var/lib/containerd from them at first boot.
const SeedDir = "/usr/local/lib/podpath/containerd"

// encodeWhiteouts (sh, $1: the preload containerd's root, $2: SeedDir) lists
// every 0:0 character device NUL separated in podpath-whiteouts, replaces
// each with an empty file, lists the snapshots holding one in
// podpath-copied-snapshots, and lays the root out in $2 as SeedDir says.
// Opaque directories (a trusted.overlay.opaque xattr) would be lost the same
// way, but podpath's own layers never have one: diffLayer (layers.go) writes
// a whiteout per deleted entry instead.
const encodeWhiteouts = `set -eu
cd "$1"
S=io.containerd.snapshotter.v1.overlayfs/snapshots
B=io.containerd.content.v1.content/blobs
find . -type c -print0 > podpath-whiteouts
xargs -0 -r sh -c 'for p; do
  [ "$(stat -c %t:%T "$p")" = 0:0 ] || { echo "$p: a character device that is not a whiteout" >&2; exit 1; }
  rm -f "$p" && : > "$p"
done' sh < podpath-whiteouts
tr '\0' '\n' < podpath-whiteouts | sed -n "s#^\./$S/\([0-9][0-9]*\)/.*#\1#p" | sort -u > podpath-copied-snapshots
mkdir -p "$2"
cp -a "$S" "$2/snapshots"
cp -a "$B" "$2/blobs"
rm -rf "$S" "$B"
mkdir -p "$S" "$B"
cp -a . "$2/root"
`

// finalize sets what docker import and commit cannot (STOPSIGNAL), with a
// FROM build of the legacy builder, which needs no registry.
func (b *builder) finalize(ctx context.Context, committed, tag string, labels map[string]string) error {
	entry, _ := json.Marshal(NodeEntrypoint)
	var df strings.Builder
	fmt.Fprintf(&df, "FROM %s\nENV container=docker\nSTOPSIGNAL SIGRTMIN+3\nENTRYPOINT %s\nCMD []\n", committed, entry)
	for _, k := range sortedKeys(labels) {
		fmt.Fprintf(&df, "LABEL %s=%q\n", k, labels[k])
	}
	if err := dockercli.BuildLegacy(ctx, df.String(), tag); err != nil {
		return fmt.Errorf("set the node image's entrypoint and stop signal: %w", err)
	}
	return nil
}
