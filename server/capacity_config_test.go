package server_test

import (
	"strings"
	"testing"

	"github.com/podpath/podpath/server"
)

// The capacity variables take Kubernetes' units (the chart passes the
// operator's values through), a bare memory number stays MiB, and a value
// that is neither stops the server naming the variable, instead of being
// dropped for the default.
func TestCapacityEnvUnits(t *testing.T) {
	for _, c := range []struct {
		cpu, mem string
		wantCPU  float64
		wantMiB  int
	}{
		{"4", "16384", 4, 16384},
		{"3500m", "16Gi", 3.5, 16384},
		{"2.5", "2048Mi", 2.5, 2048},
	} {
		t.Setenv("PODPATH_CAPACITY_CPU", c.cpu)
		t.Setenv("PODPATH_CAPACITY_MEMORY", c.mem)
		cfg := server.DefaultConfig()
		if err := cfg.Validate(); err != nil || cfg.CapacityCPU != c.wantCPU || cfg.CapacityMemory != c.wantMiB {
			t.Errorf("CPU %q, memory %q: %v cores, %d MiB (%v); want %v, %d", c.cpu, c.mem, cfg.CapacityCPU, cfg.CapacityMemory, err, c.wantCPU, c.wantMiB)
		}
	}
	t.Setenv("PODPATH_CAPACITY_CPU", "four")
	t.Setenv("PODPATH_CAPACITY_MEMORY", "16 GB")
	cfg := server.DefaultConfig()
	err := cfg.Validate()
	for _, want := range []string{`PODPATH_CAPACITY_CPU="four"`, "3500m", `PODPATH_CAPACITY_MEMORY="16 GB"`, "16Gi"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad capacity values: %v; want it to say %q", err, want)
		}
	}
}

// On the kubernetes backend the pool is the capacity: no value is a
// ceiling of none, which only that backend may have.
func TestCapacityFromPool(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.CapacityCPU, cfg.CapacityMemory = 0, 0
	if err := cfg.Validate(); err == nil {
		t.Fatal("no capacity on one host was accepted")
	}
	cfg.CapacityFromPool = true
	if err := cfg.Validate(); err != nil {
		t.Fatalf("no ceiling over the lab pool: %v", err)
	}
	cfg.CapacityCPU = -1
	if err := cfg.Validate(); err == nil {
		t.Fatal("a negative ceiling was accepted")
	}
}
