package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/podpath/podpath/bench"
	"github.com/podpath/podpath/sandbox"
)

func benchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Measure podpath on this machine (figures for docs/PERFORMANCE.md)"}
	var so bench.SandboxOptions
	var backend string
	sb := &cobra.Command{
		Use:   "sandbox",
		Short: "Node image build time (cached; cold with --cold), 2-node cluster create (median) and delete time, memory of a settled cluster",
		Args:  cobra.NoArgs,
		Long: `Measures learner clusters on this machine. With --backend kubernetes it measures the
Kubernetes backend from the same PODPATH_KUBE* settings podpath serve reads (docs/KUBERNETES.md;
PODPATH_KUBE_INSTALLATION defaults to "bench" here, so a server on the same host cluster leaves
the bench's clusters alone): create and delete times against the Docker backend in the same run
(--no-peer skips it), a settled cluster's use from the kubelet, and seats per lab node.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			so.Out = cmd.OutOrStdout()
			switch backend {
			case "docker":
				return bench.Sandbox(cmd.Context(), so)
			case "kubernetes":
				get := func(k string) string {
					if v := os.Getenv(k); v != "" || k != "PODPATH_KUBE_INSTALLATION" {
						return v
					}
					return "bench"
				}
				b, cfg, err := kubeBackend("", get, nil)
				if err != nil {
					return err
				}
				ko := bench.KubeSandboxOptions{Out: so.Out, Backend: b, Host: cfg, Runs: so.Runs, Settle: so.Settle}
				if !so.NoPeer {
					ko.Docker = sandbox.NewManager()
				}
				return bench.KubeSandbox(cmd.Context(), ko)
			default:
				return fmt.Errorf("--backend %q: use docker or kubernetes", backend)
			}
		},
	}
	sb.Flags().StringVar(&backend, "backend", "docker", "docker, or kubernetes (the PODPATH_KUBE* settings; compared with docker in the same run unless --no-peer)")
	sb.Flags().BoolVar(&so.Cold, "cold", false, "also build the node image from an empty podpath cache (many minutes)")
	sb.Flags().IntVar(&so.Runs, "runs", 3, "clusters to create for the median")
	sb.Flags().DurationVar(&so.Settle, "settle", 90*time.Second, "how long a cluster idles before its memory is read")
	sb.Flags().BoolVar(&so.NoPeer, "no-peer", false, "skip the comparison with kind's own CLI (built with go install at go.mod's version)")

	var vo bench.ServerOptions
	srv := &cobra.Command{
		Use:   "server",
		Short: "Terminal keystroke round trip (1 and N terminals), terminal output throughput, check latency (API- and node-level)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			vo.Out = cmd.OutOrStdout()
			return bench.Server(cmd.Context(), vo)
		},
	}
	srv.Flags().IntVar(&vo.Terminals, "terminals", 50, "concurrent terminals for the second latency run")
	srv.Flags().IntVar(&vo.Keystrokes, "keystrokes", 100, "keystrokes per terminal")
	srv.Flags().IntVar(&vo.Checks, "checks", 50, "checks of each kind")
	srv.Flags().BoolVar(&vo.Keep, "keep", false, "keep the bench cluster")
	var po bench.PoolOptions
	pool := &cobra.Command{
		Use:   "pool",
		Short: "Click-to-prompt (start request until the terminal shows a prompt) with a warm pool of one and without",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			po.Out = cmd.OutOrStdout()
			return bench.Pool(cmd.Context(), po)
		},
	}
	pool.Flags().IntVar(&po.Runs, "runs", 5, "starts timed in each mode")
	pool.Flags().StringVar(&po.Lab, "lab", "yaml-to-process", "the lab started")
	pool.Flags().BoolVar(&po.Baseline, "baseline", true, "also time starts without a pool (a fresh create each)")
	var se bench.SeatsOptions
	seats := &cobra.Command{
		Use:   "seats",
		Short: "What one learner cluster costs this host running and hibernated (cores, MiB), and how many seats the host holds",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			se.Out = cmd.OutOrStdout()
			return bench.Seats(cmd.Context(), se)
		},
	}
	seats.Flags().IntVar(&se.Workers, "workers", 1, "workers of the cluster measured (the built-in labs use 1)")
	seats.Flags().DurationVar(&se.Settle, "settle", 60*time.Second, "how long the cluster idles after Ready before sampling")
	seats.Flags().IntVar(&se.Samples, "samples", 10, "docker stats samples, running (a third as many hibernated)")
	seats.Flags().DurationVar(&se.Interval, "interval", 3*time.Second, "time between samples")
	var to bench.TrafficOptions
	traffic := &cobra.Command{
		Use:   "traffic",
		Short: "A web app in a learner's cluster through podpath (traffic ports) against straight to the node: latency, requests/s, download, WebSocket echo",
		Long: `Starts a server on a scratch database (DATABASE_URL), a session of --lab, and a small web app
(this binary) on port 18080 of its control plane; then times the same requests to the app straight
at the node and through podpath's traffic host (<session>-18080.localhost), as a browser sends
them, and prints the ratios.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			to.Out = cmd.OutOrStdout()
			return bench.Traffic(cmd.Context(), to)
		},
	}
	traffic.Flags().IntVar(&to.Requests, "requests", 500, "small requests timed one at a time (and sent by each concurrent client)")
	traffic.Flags().IntVar(&to.Clients, "clients", 20, "clients at once in the concurrent run")
	traffic.Flags().IntVar(&to.Messages, "messages", 1000, "WebSocket echoes timed")
	traffic.Flags().StringVar(&to.Lab, "lab", "yaml-to-process", "the lab whose session holds the app")
	var appListen string
	appCmd := &cobra.Command{
		Use:    "app",
		Short:  "The web app bench traffic runs in a node",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE:   func(cmd *cobra.Command, _ []string) error { return bench.App(appListen) },
	}
	appCmd.Flags().StringVar(&appListen, "listen", ":18080", "address to listen on")
	cmd.AddCommand(sb, srv, pool, seats, traffic, appCmd)
	return cmd
}
