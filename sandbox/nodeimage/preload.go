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
// image, pins the images so kubelet's image GC keeps them, and commits.
func (b *builder) preload(ctx context.Context, rootImage, archive, committed string, refs []string) (err error) {
	name := "podpath-nodeimage-preload-" + fmt.Sprint(time.Now().UnixNano())
	if err := dockercli.Run(ctx, "run", "-d", "--name", name, "--privileged",
		"--entrypoint", "/usr/local/bin/containerd",
		"-v", archive+":/preload/images.tar:ro",
		rootImage); err != nil {
		return fmt.Errorf("start containerd to preload images: %w", err)
	}
	defer func() {
		_ = dockercli.Run(context.WithoutCancel(ctx), "rm", "-f", "-v", name)
	}()
	ready := false
	for range 60 {
		if dockercli.Run(ctx, "exec", name, "ctr", "version") == nil {
			ready = true
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !ready {
		logs, _ := dockercli.Output(ctx, "logs", "--tail", "20", name)
		return fmt.Errorf("containerd did not start in the preload container:\n%s", logs)
	}
	if err := dockercli.Run(ctx, "exec", name, "ctr", "-n", "k8s.io", "images", "import",
		"--no-unpack", "--all-platforms", "/preload/images.tar"); err != nil {
		return fmt.Errorf("ctr images import: %w", err)
	}
	listed, err := dockercli.Output(ctx, "exec", name, "ctr", "-n", "k8s.io", "images", "ls", "-q")
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
		if err := dockercli.Run(ctx, "exec", name, "ctr", "-n", "k8s.io", "images", "label", r, "io.cri-containerd.pinned=pinned"); err != nil {
			return err
		}
	}
	b.detail("preload: %d images in the node's containerd, pinned", len(refs))
	if err := dockercli.Run(ctx, "stop", "-t", "30", name); err != nil {
		return err
	}
	if err := dockercli.Run(ctx, "commit", name, committed); err != nil {
		return fmt.Errorf("commit the preloaded node: %w", err)
	}
	return nil
}

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
