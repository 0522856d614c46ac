package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are served at /metrics in the Prometheus format: the server's
// own (terminals) beside the session engine's (clusters, capacity, pool).
type metrics struct {
	registry  *prometheus.Registry
	terminals prometheus.Gauge
}

// countShells adds a gauge of the shells the server keeps (one per
// session and node, kept across reloads).
func (m *metrics) countShells(count func() int) {
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "podpath_terminal_shells", Help: "Shells kept for learners' terminals (one per session and node).",
	}, func() float64 { return float64(count()) }))
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		terminals: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "podpath_terminals_open", Help: "Terminal websockets open now.",
		}),
	}
	m.registry.MustRegister(m.terminals,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
