package deploy_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/podpath/podpath/internal/testenv"
)

// helm returns Helm as scripts/lib.sh installs it (ensure_helm).
func helm(t *testing.T) string {
	t.Helper()
	p := os.Getenv("HELM")
	if p == "" {
		p = "/var/cache/podpath/bin/helm"
	}
	if _, err := os.Stat(p); err != nil {
		testenv.Missing(t, "helm at %s (scripts/test installs it with ensure_helm)", p)
	}
	return p
}

// The chart renders what the server needs from its values, and a value
// that cannot work is refused with what to fix, before anything is
// installed.
func TestChartRenders(t *testing.T) {
	h := helm(t)
	render := func(args ...string) (string, error) {
		out, err := exec.Command(h, append([]string{"template", "podpath", "chart", "-n", "podpath"}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := exec.Command(h, "lint", "chart").CombinedOutput(); err != nil {
		t.Fatalf("helm lint: %v\n%s", err, out)
	}
	out, err := render()
	if err != nil {
		t.Fatalf("helm template with the defaults: %v\n%s", err, out)
	}
	for _, want := range []string{
		"replicas: 2",
		"value: kubernetes", // PODPATH_SANDBOX
		`value: "podpath.dev/lab-pool=true"`,
		`value: "podpath.dev/lab-pool=true:NoSchedule"`,
		"kind: StatefulSet", // the trial Postgres, as no database was given
		"name: podpath-postgres",
		"pod-security.kubernetes.io/enforce: privileged",
		"resources: [pods/exec, pods/portforward]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the default render has no %q", want)
		}
	}
	// An external database: no trial Postgres, its URL in the Secret.
	out, err = render("--set", "database.url=postgres://u:p@db.example.org/podpath", "--set", "ingress.enabled=true")
	if err != nil {
		t.Fatalf("helm template with database.url: %v\n%s", err, out)
	}
	if strings.Contains(out, "kind: StatefulSet") || !strings.Contains(out, `DATABASE_URL: "postgres://u:p@db.example.org/podpath"`) || !strings.Contains(out, "kind: Ingress") {
		t.Errorf("with database.url and an Ingress the render is wrong:\n%s", out)
	}
	// Node Pod sizes reach the server only when given.
	if strings.Contains(out, "PODPATH_KUBE_WORKER_SIZE") {
		t.Error("a worker size was set with none given")
	}
	out, err = render("--set", "labs.workerSize=cpu=400m\\,memory=1Gi", "--set", "labs.controlPlaneSize=cpu=900m")
	if err != nil || !strings.Contains(out, "name: PODPATH_KUBE_WORKER_SIZE\n              value: \"cpu=400m,memory=1Gi\"") || !strings.Contains(out, "name: PODPATH_KUBE_CONTROL_PLANE_SIZE\n              value: \"cpu=900m\"") {
		t.Errorf("node Pod sizes: %v\n%s", err, out)
	}
	// Label and taint values YAML reads as booleans or numbers still reach
	// the server as text; a quoted numeric password is a password.
	f := t.TempDir() + "/values.yaml"
	if err := os.WriteFile(f, []byte("labs:\n  nodeSelector: {pool: true, tier: 2}\n  tolerations: [{key: dedicated, value: true, effect: NoSchedule}]\npostgres: {password: \"12345678\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = render("-f", f)
	if err != nil {
		t.Fatalf("helm template with boolean and numeric values: %v\n%s", err, out)
	}
	for _, want := range []string{`,pool=true,tier=2"`, `value: "dedicated=true:NoSchedule"`, `POSTGRES_PASSWORD: "12345678"`} {
		if !strings.Contains(out, want) {
			t.Errorf("boolean and numeric values: the render has no %q", want)
		}
	}
	// The replicas' checksum of the database settings is the same on every
	// render (a generated password must not roll them on each upgrade).
	sum := func() string {
		out, err := render()
		if err != nil {
			t.Fatal(err)
		}
		i := strings.Index(out, "checksum/database: ")
		if i < 0 {
			t.Fatalf("no checksum/database annotation")
		}
		return strings.SplitN(out[i:], "\n", 2)[0]
	}
	if a, b := sum(), sum(); a != b {
		t.Errorf("checksum/database differs between two renders: %s, %s", a, b)
	}
	if strings.Contains(out, "pods/log") {
		t.Errorf("the Role grants pods/log, which the server never reads")
	}

	for _, bad := range []struct{ values, want string }{
		{"postgres: {password: \"a b\"}", "postgres.password: use letters, digits"},
		{"labs: {tolerations: [{key: x}]}", "labs.tolerations: x needs an effect"},
		{"labs: {tolerations: [{effect: NoSchedule}]}", "every toleration needs a key"},
		{"postgres: {password: 12345678}", "postgres.password: quote it"},
	} {
		f := t.TempDir() + "/values.yaml"
		if err := os.WriteFile(f, []byte(bad.values), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := render("-f", f)
		if err == nil || !strings.Contains(out, bad.want) {
			t.Errorf("values %s: %v, want an error saying %q:\n%s", bad.values, err, bad.want, out)
		}
	}
}
