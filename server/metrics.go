package server

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/podpath/podpath/store"
)

// metrics are served at /metrics in the Prometheus format.
type metrics struct {
	registry         *prometheus.Registry
	sandboxes        *prometheus.GaugeVec
	provisionSeconds prometheus.Histogram
	checkSeconds     prometheus.Histogram
	terminals        prometheus.Gauge
	capacityCPU      prometheus.Gauge
	capacityMemory   prometheus.Gauge
	queued           prometheus.Gauge

	mu          sync.Mutex
	lastRefresh time.Time
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		sandboxes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "podpath_sandboxes", Help: "Learner clusters by state.",
		}, []string{"state"}),
		provisionSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "podpath_provision_duration_seconds", Help: "Time from the start of provisioning until a cluster (and its lab setup) is ready.",
			Buckets: []float64{20, 30, 45, 60, 90, 120, 180, 300},
		}),
		checkSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "podpath_check_duration_seconds", Help: "Time to judge one check.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 15, 60},
		}),
		terminals: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "podpath_terminals_open", Help: "Terminal websockets open now.",
		}),
		capacityCPU: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "podpath_capacity_cpu_used_cores", Help: "Estimated CPU used by running learner clusters.",
		}),
		capacityMemory: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "podpath_capacity_memory_used_mebibytes", Help: "Estimated memory used by learner clusters.",
		}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "podpath_provision_queue_length", Help: "Lab sessions waiting for room for their cluster.",
		}),
	}
	m.registry.MustRegister(m.sandboxes, m.provisionSeconds, m.checkSeconds, m.terminals,
		m.capacityCPU, m.capacityMemory, m.queued,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// refreshStates recounts sandboxes by state, at most once a second.
func (m *metrics) refreshStates(s *store.Store) {
	m.mu.Lock()
	if time.Since(m.lastRefresh) < time.Second {
		m.mu.Unlock()
		return
	}
	m.lastRefresh = time.Now()
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := s.CountSandboxesByState(ctx)
	if err != nil {
		return
	}
	for _, st := range []string{store.SandboxRequested, store.SandboxProvisioning, store.SandboxReady, store.SandboxHibernated, store.SandboxExpiring, store.SandboxDeleted, store.SandboxFailed} {
		m.sandboxes.WithLabelValues(st).Set(float64(counts[st]))
	}
}

func (m *metrics) observeCapacity(c *capacity) {
	cpu, mem, _, _, queued := c.snapshot()
	m.capacityCPU.Set(cpu)
	m.capacityMemory.Set(float64(mem))
	m.queued.Set(float64(queued))
}
