package cli

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/labtest"
	"github.com/podpath/podpath/sandbox/kube"
)

func labsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "labs", Short: "Validate and test labs"}
	var strict bool
	validate := &cobra.Command{
		Use:   "validate [DIR...]",
		Short: "Check labs and tracks for schema and reference errors (the built-in ones when no folder is given)",
		RunE: func(cmd *cobra.Command, args []string) error {
			var all []*labs.Lab
			var tracks []*labs.Track
			var problems labs.Problems
			// known are labs a track may list besides those validated
			// here: a track in a folder may list built-in labs.
			var known []*labs.Lab
			if len(args) == 0 {
				all, problems = labs.Builtin()
				tr, ps := labs.BuiltinTracks()
				tracks, problems = tr, append(problems, ps...)
			} else {
				known, _ = labs.Builtin()
			}
			for _, d := range args {
				l, ps := labs.LoadDir(d)
				tr, tps := labs.LoadDirTracks(d)
				all, tracks = append(all, l...), append(tracks, tr...)
				problems = append(append(problems, ps...), tps...)
			}
			problems = append(problems, labs.CheckTracks(tracks, append(known, all...))...)
			for _, l := range all {
				problems = append(problems, l.Warnings...)
			}
			errs, warnings := 0, 0
			for _, p := range problems {
				fmt.Fprintln(cmd.ErrOrStderr(), p.String())
				if p.Warning {
					warnings++
				} else {
					errs++
				}
			}
			if errs > 0 || (strict && warnings > 0) {
				return fmt.Errorf("%d problem(s) and %d warning(s) found", errs, warnings)
			}
			steps := 0
			for _, l := range all {
				steps += len(l.Steps)
			}
			note := ""
			if warnings > 0 {
				note = fmt.Sprintf(" (%d warning(s): --strict fails on them)", warnings)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d labs, %d steps, %d tracks: no problems%s\n", len(all), steps, len(tracks), note)
			for _, t := range tracks {
				fmt.Fprintf(cmd.OutOrStdout(), "track %s (%s): %s\n", t.ID, t.File, strings.Join(t.Labs, ", "))
			}
			return nil
		},
	}
	validate.Flags().BoolVar(&strict, "strict", false, "fail on warnings too (lints that today's labs may still have, such as a step checked by shell history alone)")
	var dirs []string
	var keep bool
	var prefix string
	var parallel int
	var strictHonesty bool
	var beforeWait time.Duration
	test := &cobra.Command{
		Use:   "test [LAB...]",
		Short: "Run labs on fresh clusters: each step's checks must fail, then pass after its solve",
		Long: `Runs labs on fresh clusters: each step's checks must fail, then pass after its solve.
The clusters come from the backend PODPATH_SANDBOX names (docker unless set; kubernetes with
the PODPATH_KUBE* settings of docs/KUBERNETES.md), so the labs are proven where they will run.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			all, problems := labs.Catalog(dirs...)
			if fatal := problems.Fatal(); len(fatal) > 0 {
				return fatal
			}
			// A Killercoda scenario with problems is left out, and the run
			// fails at the end; the others are tested.
			var leftOut labs.Problems
			for _, p := range problems {
				fmt.Fprintln(cmd.ErrOrStderr(), p.String())
				if !p.Warning {
					leftOut = append(leftOut, p)
				}
			}
			chosen := all
			if len(args) > 0 {
				chosen = nil
				for _, id := range args {
					l := labs.Find(all, id)
					if l == nil {
						var ids []string
						for _, l := range all {
							ids = append(ids, l.ID)
						}
						return fmt.Errorf("no lab %q; labs are %s", id, strings.Join(ids, ", "))
					}
					chosen = append(chosen, l)
				}
			}
			// client-go's own error lines (a probe while a lab has the
			// API server down) would land among the results.
			kube.RouteKlog(slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo})))
			// The backend PODPATH_SANDBOX names: labs are proven on the
			// Kubernetes backend the same way (docs/KUBERNETES.md).
			_, clusters, err := openBackend("", nil)
			if err != nil {
				return err
			}
			results, err := labtest.Run(cmd.Context(), clusters, chosen, labtest.Options{Out: cmd.OutOrStdout(), Keep: keep, Prefix: prefix, Parallel: parallel, StrictHonesty: strictHonesty, BeforeWait: beforeWait})
			if err != nil {
				return err
			}
			failed := 0
			for _, r := range results {
				if !r.OK() {
					failed++
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d labs failed", failed, len(results))
			}
			if len(leftOut) > 0 {
				return fmt.Errorf("the %d labs tested passed, but %d problem(s) left scenarios out (above)", len(results), len(leftOut))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "all %d labs passed\n", len(results))
			return nil
		},
	}
	test.Flags().StringSliceVar(&dirs, "labs", nil, "also load labs from this folder (repeatable)")
	test.Flags().BoolVar(&keep, "keep", false, "keep the clusters afterwards")
	test.Flags().StringVar(&prefix, "prefix", "lt", "start the name of every cluster the run makes with this")
	test.Flags().BoolVar(&strictHonesty, "strict-honesty", false, "fail a step that passes, before its solve, with a guess a learner could take without working (an answer the texts show, the commands typed as comments or echoed); without it they are warnings")
	test.Flags().IntVar(&parallel, "parallel", 1, "clusters to use at once (each lab that does not share its cluster gets its own; shared labs share one per cluster shape, spread over this many)")
	test.Flags().DurationVar(&beforeWait, "before-wait", 0, "before each step's solve, poll each of its checks for its within but at most this long (0, the default: each check's full within, as a learner's Check waits)")
	cmd.AddCommand(validate, test)
	return cmd
}
