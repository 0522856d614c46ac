package session

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podpath/podpath/store"
)

// Metrics are the engine's Prometheus collectors; the server registers
// them beside its own.
type Metrics struct {
	sandboxes        *prometheus.GaugeVec
	provisionSeconds prometheus.Histogram
	checkSeconds     prometheus.Histogram
	capacityCPU      prometheus.Gauge
	capacityMemory   prometheus.Gauge
	queued           prometheus.Gauge
	poolSize         *prometheus.GaugeVec
	poolReady        *prometheus.GaugeVec
	poolClaims       prometheus.Counter
	poolMisses       prometheus.Counter
	writeRetries     prometheus.Counter
	pendingWrites    prometheus.Gauge

	claims, misses atomic.Int64
}

func newMetrics() *Metrics {
	return &Metrics{
		sandboxes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "podpath_sandboxes", Help: "Learner clusters by state.",
		}, []string{"state"}),
		provisionSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "podpath_provision_duration_seconds", Help: "Time from the start of provisioning until a cluster (and its lab setup) is ready.",
			Buckets: []float64{1, 2, 5, 10, 20, 30, 45, 60, 90, 120, 180, 300},
		}),
		checkSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "podpath_check_duration_seconds", Help: "Time to judge one check.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 15, 60},
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
		poolSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "podpath_pool_size", Help: "Warm-pool clusters wanted, by cluster shape (workers).",
		}, []string{"workers"}),
		poolReady: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "podpath_pool_ready", Help: "Warm-pool clusters ready to be claimed, by cluster shape (workers).",
		}, []string{"workers"}),
		poolClaims: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "podpath_pool_claims_total", Help: "Lab starts that got a warm-pool cluster.",
		}),
		poolMisses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "podpath_pool_misses_total", Help: "Lab starts that found no warm-pool cluster of their shape and created one.",
		}),
		writeRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "podpath_state_write_retries_total", Help: "Sandbox state writes Postgres refused, left to the reaper to try again.",
		}),
		pendingWrites: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "podpath_state_writes_pending", Help: "Sandbox state writes waiting for Postgres.",
		}),
	}
}

// Collectors lists the collectors to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.sandboxes, m.provisionSeconds, m.checkSeconds, m.capacityCPU, m.capacityMemory,
		m.queued, m.poolSize, m.poolReady, m.poolClaims, m.poolMisses, m.writeRetries, m.pendingWrites}
}

func (m *Metrics) claim(hit bool) {
	if hit {
		m.claims.Add(1)
		m.poolClaims.Inc()
		return
	}
	m.misses.Add(1)
	m.poolMisses.Inc()
}

// observe refreshes the gauges (the reaper calls it).
func (m *Metrics) observe(e *Engine) {
	u := e.capacity.usage()
	m.capacityCPU.Set(u.CPU)
	m.capacityMemory.Set(float64(u.Memory))
	m.queued.Set(float64(u.Queued))
	m.pendingWrites.Set(float64(e.writes.pendingCount()))
	for _, sh := range e.Pool().Shapes {
		w := itoa(sh.Workers)
		m.poolSize.WithLabelValues(w).Set(float64(sh.Size))
		m.poolReady.WithLabelValues(w).Set(float64(sh.Ready))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := e.store.CountSandboxesByState(ctx)
	if err != nil {
		return
	}
	for _, st := range []string{store.SandboxRequested, store.SandboxProvisioning, store.SandboxReady, store.SandboxHibernated, store.SandboxExpiring, store.SandboxDeleted, store.SandboxFailed} {
		m.sandboxes.WithLabelValues(st).Set(float64(counts[st]))
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
