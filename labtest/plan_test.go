package labtest

import (
	"testing"
	"time"

	"github.com/podpath/podpath/labs"
)

func TestPlanJobs(t *testing.T) {
	all, problems := labs.Catalog()
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	for _, parallel := range []int{1, 2, 3} {
		jobs := planJobs("ci", all, parallel, 20*time.Second)
		seen := map[string]bool{}
		clusters := map[string]bool{}
		var total, heaviest int64
		for _, j := range jobs {
			if clusters[j.cluster] {
				t.Errorf("parallel %d: cluster %s planned twice", parallel, j.cluster)
			}
			clusters[j.cluster] = true
			var w int64
			for _, l := range j.labs {
				if seen[l.ID] {
					t.Errorf("parallel %d: lab %s planned twice", parallel, l.ID)
				}
				seen[l.ID] = true
				if len(j.labs) > 1 && !l.Cluster.Shared {
					t.Errorf("parallel %d: lab %s does not share its cluster but runs on %s with others", parallel, l.ID, j.cluster)
				}
				if l.Cluster.Workers != j.labs[0].Cluster.Workers {
					t.Errorf("parallel %d: %s mixes cluster shapes", parallel, j.cluster)
				}
				w += int64(estimate(l, 20*time.Second))
			}
			total += w
			heaviest = max(heaviest, w)
			t.Logf("parallel %d: %-22s %4.0f min  %d labs", parallel, j.cluster, float64(w)/60e9, len(j.labs))
		}
		if len(seen) != len(all) {
			t.Errorf("parallel %d: %d of %d labs planned", parallel, len(seen), len(all))
		}
		for i := 1; i < len(jobs); i++ {
			if jobs[i].weight > jobs[i-1].weight {
				t.Errorf("parallel %d: %s (%s) is after a lighter job", parallel, jobs[i].cluster, jobs[i].weight)
			}
		}
		// One cluster at a time: one per shape for the shared labs.
		if parallel == 1 {
			shapes := map[int]bool{}
			shared := 0
			for _, j := range jobs {
				if j.labs[0].Cluster.Shared {
					shared++
					shapes[j.labs[0].Cluster.Workers] = true
				}
			}
			if shared != len(shapes) {
				t.Errorf("one at a time: %d shared clusters for %d shapes", shared, len(shapes))
			}
		} else {
			// Shared labs are spread over the clusters at once: no shared
			// cluster takes more than its part of them.
			per := map[int]int{}
			for _, l := range all {
				if l.Cluster.Shared {
					per[l.Cluster.Workers]++
				}
			}
			for _, j := range jobs {
				if n := per[j.labs[0].Cluster.Workers]; j.labs[0].Cluster.Shared && len(j.labs) > (n+parallel-1)/parallel {
					t.Errorf("parallel %d: %s runs %d of the %d shared labs of its shape", parallel, j.cluster, len(j.labs), n)
				}
			}
		}
	}
}

// Shared labs that ask for other worker sizes never share a cluster: it
// would be made at the first one's size.
func TestPlanKeepsWorkerSizesApart(t *testing.T) {
	small := &labs.Lab{ID: "small", Cluster: labs.Cluster{Workers: 1, Shared: true}}
	big := &labs.Lab{ID: "big", Cluster: labs.Cluster{Workers: 1, Shared: true, Worker: labs.NodeSize{Memory: "4Gi"}}}
	big2 := &labs.Lab{ID: "big2", Cluster: labs.Cluster{Workers: 1, Shared: true, Worker: labs.NodeSize{Memory: "4096Mi"}}}
	jobs := planJobs("ci", []*labs.Lab{small, big, big2}, 1, 20*time.Second)
	if len(jobs) != 2 {
		t.Fatalf("%d jobs, want 2 (the default size, and 4 GiB): %+v", len(jobs), jobs)
	}
	for _, j := range jobs {
		if len(j.labs) == 2 && (j.labs[0] == small || j.labs[1] == small) {
			t.Fatalf("the default-sized lab shares %s with a 4 GiB one", j.cluster)
		}
	}
}
