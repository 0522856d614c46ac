package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/podpath/podpath/bench"
)

func benchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Measure podpath on this machine (figures for docs/PERFORMANCE.md)"}
	var so bench.SandboxOptions
	sb := &cobra.Command{
		Use:   "sandbox",
		Short: "Node image build time (cached; cold with --cold), 2-node cluster create (median) and delete time, memory of a settled cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			so.Out = cmd.OutOrStdout()
			return bench.Sandbox(cmd.Context(), so)
		},
	}
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
	cmd.AddCommand(sb, srv, pool, seats)
	return cmd
}
