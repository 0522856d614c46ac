package sandbox

import (
	"strings"
	"testing"
)

// A published port reaches kind as an extraPortMapping of the control plane
// only, on every address; bad --publish values are refused with the form.
func TestPublishedPorts(t *testing.T) {
	pm, err := ParsePortMapping("8090:30080")
	if err != nil || pm != (PortMapping{HostPort: 8090, NodePort: 30080}) {
		t.Fatalf("ParsePortMapping(8090:30080) = %+v, %v", pm, err)
	}
	for _, bad := range []string{"", "8090", "8090:", ":30080", "0:30080", "8090:70000", "a:b", "8090:30080:1"} {
		if _, err := ParsePortMapping(bad); err == nil || !strings.Contains(err.Error(), "HOST:NODE") {
			t.Errorf("ParsePortMapping(%q) = %v, want an error naming HOST:NODE", bad, err)
		}
	}
	cfg := kindConfig(Spec{Name: "h", Workers: 2, Publish: []PortMapping{pm}})
	if len(cfg.Nodes) != 3 {
		t.Fatalf("%d nodes, want 3", len(cfg.Nodes))
	}
	cp := cfg.Nodes[0].ExtraPortMappings
	if len(cp) != 1 || cp[0].HostPort != 8090 || cp[0].ContainerPort != 30080 || cp[0].ListenAddress != "0.0.0.0" {
		t.Fatalf("control plane port mappings %+v", cp)
	}
	for _, w := range cfg.Nodes[1:] {
		if len(w.ExtraPortMappings) != 0 {
			t.Fatalf("a worker publishes %+v", w.ExtraPortMappings)
		}
	}
	if got := kindConfig(Spec{Name: "h"}).Nodes[0].ExtraPortMappings; len(got) != 0 {
		t.Fatalf("no --publish, yet %+v", got)
	}
}
