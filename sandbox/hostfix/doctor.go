package hostfix

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/podpath/podpath/internal/dockercli"
)

// Severity of a finding.
type Severity int

// Finding severities: OK is fine, Warn degrades, Fail stops sandboxes.
const (
	OK Severity = iota
	Warn
	Fail
)

// Finding is what one check found.
type Finding struct {
	Check    string
	Severity Severity
	Message  string
	// Fix says what to do; Fixed says --fix did it.
	Fix   string
	Fixed bool
}

// Doctor checks the host for what learner clusters need.
type Doctor struct {
	// Fix applies the safe fixes: inotify limits, the runc wrapper.
	Fix bool
	// WrapperPath is where the runc wrapper is installed.
	WrapperPath string
	// DaemonConfig is dockerd's configuration file.
	DaemonConfig string
	// ImageRef is the node image sandboxes use, to say whether it is built.
	ImageRef string
	// DataDirs are folders whose free space matters.
	DataDirs []string
}

// DefaultWrapperPath is where --fix installs the runc wrapper.
const DefaultWrapperPath = "/usr/local/libexec/podpath/" + WrapperName

// Run performs every check in order.
func (d *Doctor) Run(ctx context.Context) []Finding {
	if d.WrapperPath == "" {
		d.WrapperPath = DefaultWrapperPath
	}
	if d.DaemonConfig == "" {
		d.DaemonConfig = "/etc/docker/daemon.json"
	}
	var out []Finding
	docker := d.checkDocker(ctx)
	out = append(out, docker)
	if docker.Severity != Fail {
		out = append(out, d.checkCapabilities(ctx))
		if d.ImageRef != "" {
			out = append(out, d.checkImage(ctx))
		}
	}
	out = append(out, checkCgroups(), d.checkInotify(), checkMemory())
	for _, dir := range d.DataDirs {
		out = append(out, checkDisk(dir))
	}
	return out
}

func (d *Doctor) checkDocker(ctx context.Context) Finding {
	f := Finding{Check: "docker"}
	if err := dockercli.Ping(ctx); err != nil {
		f.Severity, f.Message = Fail, err.Error()
		f.Fix = "install docker.io and start dockerd (scripts/quickstart and scripts/test do both)"
		return f
	}
	v, _ := dockercli.Output(ctx, "version", "--format", "{{.Server.Version}}")
	f.Message = "Docker engine " + v + " answers"
	return f
}

// probeImage is a one-file image made from this binary; starting it shows
// whether runc can give a container every capability.
const probeImage = "podpath/probe:capabilities"

// ProbeCapabilities reports whether runc itself (not podpath's wrapper) fails
// to give a privileged container its capabilities on this host.
func ProbeCapabilities(ctx context.Context) (refused bool, err error) {
	if ok, _ := dockercli.ImageExists(ctx, probeImage); !ok {
		if err := importProbeImage(ctx); err != nil {
			return false, err
		}
	}
	err = dockercli.Run(ctx, "run", "--rm", "--runtime", "runc", "--privileged", "--network", "none", probeImage, "/probe", "version")
	if err == nil {
		return false, nil
	}
	if strings.Contains(err.Error(), "apply caps") || strings.Contains(err.Error(), "operation not permitted") {
		return true, nil
	}
	// The container started: the binary may just not run there, which
	// still shows runc applied the capabilities.
	if strings.Contains(err.Error(), "exec") || dockercli.ExitCode(err) != 125 {
		return false, nil
	}
	return false, err
}

func importProbeImage(ctx context.Context) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	f, err := os.Open(self)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() {
		tw := newTar(pw)
		err := tw.file("probe", 0o755, fi.Size(), f)
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	return dockercli.RunIO(ctx, pr, io.Discard, nil, "import", "-", probeImage)
}

func (d *Doctor) checkCapabilities(ctx context.Context) Finding {
	f := Finding{Check: "capabilities"}
	refused, err := ProbeCapabilities(ctx)
	if err != nil {
		f.Severity, f.Message = Warn, "could not test privileged containers: "+err.Error()
		return f
	}
	if !refused {
		f.Message = "privileged containers get every capability; no runc wrapper needed"
		return f
	}
	defaultRuntime, _ := dockercli.Output(ctx, "info", "--format", "{{.DefaultRuntime}}")
	if defaultRuntime == WrapperName {
		f.Message = "this host refuses " + strings.Join(DefaultRefusedCaps, " and ") + " to runc; dockerd runs containers through " + WrapperName + ", which drops them"
		return f
	}
	f.Severity = Fail
	f.Message = "this host refuses " + strings.Join(DefaultRefusedCaps, " and ") + " to runc, so kind's privileged nodes cannot start"
	f.Fix = "podpath doctor --fix installs " + d.WrapperPath + " as dockerd's default runtime and reloads dockerd"
	if d.Fix {
		if err := d.installWrapper(ctx); err != nil {
			f.Fix += " (tried: " + err.Error() + ")"
			return f
		}
		f.Fixed, f.Severity = true, OK
		f.Message += "; fixed: dockerd now runs containers through " + WrapperName
	}
	return f
}

// installWrapper copies this binary to WrapperPath, registers it as dockerd's
// default runtime and makes dockerd reload its configuration (SIGHUP).
func (d *Doctor) installWrapper(ctx context.Context) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := copyExecutable(self, d.WrapperPath); err != nil {
		return fmt.Errorf("install wrapper: %w", err)
	}
	cfg := map[string]any{}
	if raw, err := os.ReadFile(d.DaemonConfig); err == nil && len(strings.TrimSpace(string(raw))) > 0 {
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return fmt.Errorf("%s is not valid JSON (%v): fix it by hand", d.DaemonConfig, err)
		}
	}
	runtimes, _ := cfg["runtimes"].(map[string]any)
	if runtimes == nil {
		runtimes = map[string]any{}
	}
	runtimes[WrapperName] = map[string]any{"path": d.WrapperPath}
	cfg["runtimes"] = runtimes
	cfg["default-runtime"] = WrapperName
	out, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.MkdirAll(filepath.Dir(d.DaemonConfig), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(d.DaemonConfig, append(out, '\n'), 0o644); err != nil {
		return err
	}
	if err := reloadDockerd(); err != nil {
		return err
	}
	for range 20 {
		if rt, _ := dockercli.Output(ctx, "info", "--format", "{{.DefaultRuntime}}"); rt == WrapperName {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return errors.New("dockerd did not take the new default runtime: restart dockerd")
}

func reloadDockerd() error {
	raw, err := os.ReadFile("/var/run/docker.pid")
	if err != nil {
		return fmt.Errorf("find dockerd (/var/run/docker.pid): %w; restart dockerd by hand", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return fmt.Errorf("read /var/run/docker.pid: %w", err)
	}
	return syscall.Kill(pid, syscall.SIGHUP)
}

func copyExecutable(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

func (d *Doctor) checkImage(ctx context.Context) Finding {
	f := Finding{Check: "node image"}
	ok, err := dockercli.ImageExists(ctx, d.ImageRef)
	switch {
	case err != nil:
		f.Severity, f.Message = Warn, err.Error()
	case !ok:
		f.Severity, f.Message = Warn, d.ImageRef+" is not built yet"
		f.Fix = "podpath nodeimage build (or set PODPATH_NODE_IMAGE to an image you have)"
	default:
		f.Message = d.ImageRef + " is in the local Docker engine"
	}
	return f
}

func checkCgroups() Finding {
	f := Finding{Check: "cgroups"}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		f.Message = "cgroup v2 (unified)"
		return f
	}
	f.Message = "cgroup v1: Kubernetes up to 1.34 runs as is; 1.35 and later need failCgroupV1: false"
	return f
}

// inotify limits: each node's kubelet, containerd and systemd watch files, and
// many clusters fail at the default of 128 instances.
var inotifyWant = map[string]int{
	"fs.inotify.max_user_instances": 8192,
	"fs.inotify.max_user_watches":   524288,
}

func (d *Doctor) checkInotify() Finding {
	f := Finding{Check: "inotify"}
	var low []string
	for _, key := range sortedKeysInt(inotifyWant) {
		have, err := readSysctl(key)
		if err != nil {
			f.Severity, f.Message = Warn, err.Error()
			return f
		}
		if have < inotifyWant[key] {
			low = append(low, fmt.Sprintf("%s=%d (want %d)", key, have, inotifyWant[key]))
		}
	}
	if len(low) == 0 {
		f.Message = "limits fit many clusters"
		return f
	}
	f.Severity = Warn
	f.Message = "too low for many clusters: " + strings.Join(low, ", ")
	f.Fix = "podpath doctor --fix raises them and writes /etc/sysctl.d/99-podpath.conf"
	if d.Fix {
		var conf strings.Builder
		for _, key := range sortedKeysInt(inotifyWant) {
			if err := writeSysctl(key, inotifyWant[key]); err != nil {
				f.Fix += " (tried: " + err.Error() + ")"
				return f
			}
			fmt.Fprintf(&conf, "%s = %d\n", key, inotifyWant[key])
		}
		if err := os.WriteFile("/etc/sysctl.d/99-podpath.conf", []byte("# podpath: room for many kind clusters\n"+conf.String()), 0o644); err != nil {
			f.Fix += " (raised now, but could not persist: " + err.Error() + ")"
		}
		f.Fixed, f.Severity = true, OK
		f.Message += "; fixed"
	}
	return f
}

func sysctlPath(key string) string {
	return "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
}

func readSysctl(key string) (int, error) {
	raw, err := os.ReadFile(sysctlPath(key))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(raw)))
}

func writeSysctl(key string, v int) error {
	return os.WriteFile(sysctlPath(key), []byte(strconv.Itoa(v)), 0o644)
}

func checkMemory() Finding {
	f := Finding{Check: "memory"}
	avail, err := memAvailable()
	if err != nil {
		f.Severity, f.Message = Warn, err.Error()
		return f
	}
	gib := float64(avail) / (1 << 30)
	f.Message = fmt.Sprintf("%.1f GiB available, room for about %d two-node clusters at 0.7 GiB each", gib, int(gib/0.7))
	if gib < 2 {
		f.Severity = Warn
		f.Fix = "free memory: a two-node cluster needs about 0.7 GiB"
	}
	return f
}

func memAvailable() (int64, error) {
	fh, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("no MemAvailable in /proc/meminfo")
}

func checkDisk(dir string) Finding {
	f := Finding{Check: "disk " + dir}
	for p := dir; ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil {
			dir = p
			break
		}
		if p == "/" {
			break
		}
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		f.Severity, f.Message = Warn, err.Error()
		return f
	}
	free := float64(st.Bavail) * float64(st.Bsize) / (1 << 30)
	f.Message = fmt.Sprintf("%.0f GiB free", free)
	if free < 15 {
		f.Severity = Warn
		f.Fix = "free disk space: the node image build needs about 8 GiB and each node about 1 GiB"
	}
	return f
}

func sortedKeysInt(m map[string]int) []string {
	return slices.Sorted(maps.Keys(m))
}

// probeTar writes the one-file probe image.
type probeTar struct{ tw *tar.Writer }

func newTar(w io.Writer) probeTar { return probeTar{tar.NewWriter(w)} }

func (t probeTar) file(name string, mode int64, size int64, r io.Reader) error {
	if err := t.tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: size, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err := io.Copy(t.tw, r)
	return err
}

func (t probeTar) Close() error { return t.tw.Close() }
