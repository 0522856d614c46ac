package grader

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podpath/podpath/labs"
)

// The events of two Pods named web, the first deleted before the second
// was created, and of another Pod, in the order the API server lists them
// (not time order).
func podEvents() []corev1.Event {
	t0 := time.Unix(1_800_000_000, 0)
	at := func(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }
	ev := func(rv, name, uid, reason, component string, first, last int) corev1.Event {
		return corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{ResourceVersion: rv, CreationTimestamp: at(first)},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: name, UID: types.UID(uid)},
			Reason:         reason, Source: corev1.EventSource{Component: component},
			FirstTimestamp: at(first), LastTimestamp: at(last),
		}
	}
	return []corev1.Event{
		ev("30", "web", "new", "Started", "kubelet", 62, 62),
		ev("10", "web", "old", "Scheduled", "default-scheduler", 0, 0),
		ev("12", "web", "old", "Started", "kubelet", 2, 2),
		// repeated until the old Pod went: first seen early, last seen late
		ev("13", "web", "old", "BackOff", "kubelet", 3, 58),
		ev("29", "web", "new", "Scheduled", "default-scheduler", 60, 60),
		ev("40", "web-2", "other", "Started", "kubelet", 70, 70),
		// the same second as new's Started: the later stored comes last
		ev("31", "web", "new", "Pulled", "kubelet", 62, 62),
	}
}

func TestEventLines(t *testing.T) {
	cases := []struct {
		name string
		p    labs.EventsProbe
		uid  string
		want string
	}{
		{"every event of both Pods, oldest first", labs.EventsProbe{Kind: "Pod", Name: "web"}, "",
			"Scheduled\nStarted\nBackOff\nScheduled\nStarted\nPulled"},
		{"only the Pod there now", labs.EventsProbe{Kind: "Pod", Name: "web"}, "new", "Scheduled\nStarted\nPulled"},
		{"only the deleted one", labs.EventsProbe{Kind: "Pod", Name: "web"}, "old", "Scheduled\nStarted\nBackOff"},
		{"latest", labs.EventsProbe{Kind: "Pod", Name: "web", Pick: "latest"}, "", "Pulled"},
		// BackOff began before Started but was last seen after it.
		{"latest by when it was last seen", labs.EventsProbe{Kind: "Pod", Name: "web", Pick: "latest"}, "old", "BackOff"},
		{"latest of a reason", labs.EventsProbe{Kind: "Pod", Name: "web", Reason: "Scheduled", Pick: "latest", Field: "reason component"}, "", "Scheduled default-scheduler"},
		{"a prefix", labs.EventsProbe{Kind: "Pod", Name: "web*", Reason: "Started", Field: "component"}, "", "kubelet\nkubelet\nkubelet"},
		{"latest of a prefix", labs.EventsProbe{Kind: "Pod", Name: "web*", Pick: "latest"}, "", "Started"},
		{"another kind", labs.EventsProbe{Kind: "Node", Name: "web"}, "", ""},
		{"a uid no event has", labs.EventsProbe{Kind: "Pod", Name: "web", Pick: "latest"}, "gone", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := eventLines(podEvents(), &c.p, c.uid); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// An events.k8s.io event that repeats keeps its time and moves its series'.
func TestLatestOfASeries(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	mk := func(reason string, at int, series int) corev1.Event {
		e := corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web"}, Reason: reason, EventTime: metav1.NewMicroTime(t0.Add(time.Duration(at) * time.Second))}
		if series > 0 {
			e.Series = &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(t0.Add(time.Duration(series) * time.Second))}
		}
		return e
	}
	events := []corev1.Event{mk("FailedMount", 1, 30), mk("Started", 10, 0)}
	p := labs.EventsProbe{Kind: "Pod", Name: "web", Pick: "latest"}
	if got := eventLines(events, &p, ""); got != "FailedMount" {
		t.Errorf("latest: %q, want the series seen last", got)
	}
	p.Pick = ""
	if got := eventLines(events, &p, ""); got != "FailedMount\nStarted" {
		t.Errorf("all: %q", got)
	}
}
