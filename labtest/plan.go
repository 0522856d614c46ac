package labtest

import (
	"fmt"
	"sort"
	"time"

	"github.com/podpath/podpath/labs"
)

// job is one cluster and the labs run on it, one after another.
type job struct {
	cluster string
	labs    []*labs.Lab
	weight  time.Duration
}

// planJobs groups labs into jobs: a lab that does not share its cluster
// gets its own; shared labs of one shape share one cluster, or, with
// clusters at once, are spread over that many (seven shared labs on one
// cluster were 34 minutes of a 35-minute run on two: the other cluster
// sat idle at the end). The heaviest jobs go first, so that a long one
// does not start last. beforeWait is Options.BeforeWait, for the weights.
func planJobs(prefix string, all []*labs.Lab, parallel int, beforeWait time.Duration) []*job {
	if parallel < 1 {
		parallel = 1
	}
	shapes := map[string][]*labs.Lab{}
	var order []string
	var jobs []*job
	for _, lab := range all {
		name := clusterName(prefix, lab)
		if !lab.Cluster.Shared {
			jobs = append(jobs, &job{cluster: name, labs: []*labs.Lab{lab}})
			continue
		}
		if shapes[name] == nil {
			order = append(order, name)
		}
		shapes[name] = append(shapes[name], lab)
	}
	for _, shape := range order {
		list := shapes[shape]
		size := (len(list) + parallel - 1) / parallel
		for i := 0; i < len(list); i += size {
			name := shape
			if i > 0 {
				name = fmt.Sprintf("%s-%d", shape, i/size+1)
			}
			jobs = append(jobs, &job{cluster: name, labs: list[i:min(i+size, len(list))]})
		}
	}
	for _, j := range jobs {
		for _, l := range j.labs {
			j.weight += estimate(l, beforeWait)
		}
	}
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].weight > jobs[b].weight })
	return jobs
}

// estimate is a rough cost of a lab, for planning only: a little for each
// step and check, the wait before the solve, and half the step's longest
// within after it (about what kubelet takes to do what the step asks).
func estimate(lab *labs.Lab, beforeWait time.Duration) time.Duration {
	d := 30 * time.Second // setup, cleanup
	for _, st := range lab.Steps {
		var longest time.Duration
		for _, c := range st.Checks {
			longest = max(longest, c.Within.D(), c.Holds.D())
		}
		before := longest
		if beforeWait > 0 {
			before = min(before, beforeWait)
		}
		d += 10*time.Second + 2*time.Second*time.Duration(len(st.Checks)) + before + longest/2
	}
	return d
}
