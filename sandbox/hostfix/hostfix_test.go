package hostfix

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/podpath/podpath/internal/testenv"
)

func TestSpecToEdit(t *testing.T) {
	cases := []struct {
		args      []string
		sub, path string
	}{
		{[]string{"--root", "/run/runc", "--log", "/x.log", "--log-format", "json", "create", "--bundle", "/b", "--pid-file", "/p", "id"}, "create", "/b/config.json"},
		{[]string{"create", "-b", "/b2", "id"}, "create", "/b2/config.json"},
		{[]string{"run", "--bundle=/b3", "id"}, "run", "/b3/config.json"},
		{[]string{"--systemd-cgroup", "exec", "--process", "/tmp/proc.json", "--detach", "id"}, "exec", "/tmp/proc.json"},
		{[]string{"start", "id"}, "start", ""},
		{[]string{"--version"}, "", ""},
	}
	for _, c := range cases {
		sub, path := specToEdit(c.args)
		if sub != c.sub || path != c.path {
			t.Errorf("%v: %q %q, want %q %q", c.args, sub, path, c.sub, c.path)
		}
	}
}

func TestStripCaps(t *testing.T) {
	dir := t.TempDir()
	caps := []any{"CAP_CHOWN", "CAP_SYS_MODULE", "CAP_SYS_RESOURCE", "CAP_NET_ADMIN"}
	bundle := map[string]any{
		"ociVersion": "1.0.2",
		"process":    map[string]any{"args": []any{"sh"}, "capabilities": map[string]any{"bounding": caps, "effective": caps, "permitted": caps}},
		"root":       map[string]any{"path": "rootfs"},
	}
	b, _ := json.Marshal(bundle)
	cfg := filepath.Join(dir, "config.json")
	os.WriteFile(cfg, b, 0o600)
	if err := stripCaps(cfg, false, DefaultRefusedCaps); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	raw, _ := os.ReadFile(cfg)
	json.Unmarshal(raw, &got)
	for _, set := range []string{"bounding", "effective", "permitted"} {
		list := got["process"].(map[string]any)["capabilities"].(map[string]any)[set].([]any)
		var names []string
		for _, c := range list {
			names = append(names, c.(string))
		}
		if slices.Contains(names, "CAP_SYS_MODULE") || slices.Contains(names, "CAP_SYS_RESOURCE") || !slices.Contains(names, "CAP_NET_ADMIN") {
			t.Errorf("%s after stripping: %v", set, names)
		}
	}
	if got["root"].(map[string]any)["path"] != "rootfs" {
		t.Error("stripping lost other fields of the spec")
	}
	// An exec process spec has the capabilities at its top level.
	proc := filepath.Join(dir, "proc.json")
	b, _ = json.Marshal(map[string]any{"args": []any{"sh"}, "capabilities": map[string]any{"bounding": caps}})
	os.WriteFile(proc, b, 0o600)
	if err := stripCaps(proc, true, DefaultRefusedCaps); err != nil {
		t.Fatal(err)
	}
	raw, _ = os.ReadFile(proc)
	if strings.Contains(string(raw), "CAP_SYS_RESOURCE") || !strings.Contains(string(raw), "CAP_CHOWN") {
		t.Errorf("process spec after stripping: %s", raw)
	}
}

// On a host with Docker, doctor finds the engine, and on a host that
// refuses capabilities, it finds the wrapper in place (scripts/test runs
// doctor --fix before the tests).
func TestDoctor(t *testing.T) {
	testenv.Docker(t)
	d := &Doctor{ImageRef: "podpath/does-not-exist:1", DataDirs: []string{t.TempDir()}}
	findings := d.Run(context.Background())
	by := map[string]Finding{}
	for _, f := range findings {
		by[f.Check] = f
	}
	if f := by["docker"]; f.Severity != OK || !strings.Contains(f.Message, "Docker engine") {
		t.Errorf("docker: %+v", f)
	}
	if f := by["capabilities"]; f.Severity == Fail {
		t.Errorf("capabilities: %+v (run podpath doctor --fix)", f)
	}
	if f := by["node image"]; f.Severity != Warn || !strings.Contains(f.Fix, "podpath nodeimage build") {
		t.Errorf("missing node image: %+v", f)
	}
	if f := by["cgroups"]; !strings.Contains(f.Message, "cgroup v") {
		t.Errorf("cgroups: %+v", f)
	}
	if _, ok := by["memory"]; !ok {
		t.Error("no memory finding")
	}
	refused, err := ProbeCapabilities(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("this host refuses capabilities to runc: %v", refused)
}
