// Package hostfix detects and works around host quirks that stop kind nodes
// from starting, such as a kernel that refuses some capabilities to runc.
package hostfix

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// WrapperName is the file name the runc wrapper is installed under. The
// podpath binary acts as the wrapper when it is started under this name.
const WrapperName = "podpath-runc"

// RefusedCapsEnv overrides, for one run, which capabilities the wrapper drops.
const RefusedCapsEnv = "PODPATH_REFUSED_CAPS"

// DefaultRefusedCaps are the capabilities that sandboxed hosts such as
// Firecracker VMs refuse to runc: privileged containers ask for all of them,
// and runc's capset then fails with EPERM.
var DefaultRefusedCaps = []string{"CAP_SYS_MODULE", "CAP_SYS_RESOURCE"}

// realRuncCandidates are where Debian, Docker's packages and kind's nodes put runc.
var realRuncCandidates = []string{"/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc", "/usr/local/bin/runc"}

// RunWrapper strips refused capabilities from the OCI bundle (create, run) or
// process spec (exec) named in args, then replaces this process with the real
// runc. args excludes the program name.
func RunWrapper(args []string) error {
	caps := refusedCaps()
	sub, specPath := specToEdit(args)
	if specPath != "" {
		if err := stripCaps(specPath, sub == "exec", caps); err != nil {
			return fmt.Errorf("%s: %w", WrapperName, err)
		}
	}
	runc, err := realRunc()
	if err != nil {
		return err
	}
	return syscall.Exec(runc, append([]string{"runc"}, args...), os.Environ())
}

func refusedCaps() []string {
	if v := os.Getenv(RefusedCapsEnv); v != "" {
		return strings.Split(v, ",")
	}
	return DefaultRefusedCaps
}

// globalFlagsWithValue are runc's global flags that take a separate value.
var globalFlagsWithValue = map[string]bool{"--root": true, "--log": true, "--log-format": true, "--criu": true, "--rootless": true}

// specToEdit finds runc's subcommand and the JSON file whose capabilities the
// subcommand will apply.
func specToEdit(args []string) (sub, path string) {
	i := 0
	for i < len(args) {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			break
		}
		if globalFlagsWithValue[a] {
			i++
		}
		i++
	}
	if i >= len(args) {
		return "", ""
	}
	sub = args[i]
	rest := args[i+1:]
	switch sub {
	case "create", "run":
		bundle := flagValue(rest, "--bundle", "-b")
		if bundle == "" {
			bundle = "."
		}
		return sub, filepath.Join(bundle, "config.json")
	case "exec":
		return sub, flagValue(rest, "--process", "-p")
	}
	return sub, ""
}

func flagValue(args []string, long, short string) string {
	for i, a := range args {
		if (a == long || a == short) && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, long+"="); ok {
			return v
		}
	}
	return ""
}

// stripCaps removes caps from every capability set in the spec at path. In an
// OCI bundle the sets live under .process.capabilities; in an exec process
// file under .capabilities.
func stripCaps(path string, isProcess bool, caps []string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var spec map[string]any
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	proc := spec
	if !isProcess {
		p, ok := spec["process"].(map[string]any)
		if !ok {
			return nil
		}
		proc = p
	}
	sets, ok := proc["capabilities"].(map[string]any)
	if !ok {
		return nil
	}
	changed := false
	for name, v := range sets {
		list, ok := v.([]any)
		if !ok {
			continue
		}
		kept := list[:0:0]
		for _, c := range list {
			if s, ok := c.(string); ok && slices.Contains(caps, s) {
				changed = true
				continue
			}
			kept = append(kept, c)
		}
		sets[name] = kept
	}
	if !changed {
		return nil
	}
	out, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}

func realRunc() (string, error) {
	self, _ := os.Executable()
	for _, c := range realRuncCandidates {
		if c == self {
			continue
		}
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			if resolved, err := filepath.EvalSymlinks(c); err == nil && resolved == self {
				continue
			}
			return c, nil
		}
	}
	return "", errors.New(WrapperName + ": no runc found in " + strings.Join(realRuncCandidates, ", "))
}
