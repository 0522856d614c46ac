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
