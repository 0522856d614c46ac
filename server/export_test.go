package server

import (
	"fmt"

	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/store"
)

// RenderStepForTest renders a lab's step as the lab page shows it in the
// session's mode (challenge for a challenge lab), over a sample cluster.
func RenderStepForTest(l *labs.Lab, step, lg string) (string, error) {
	for _, st := range l.Steps {
		if st.ID != step {
			continue
		}
		text, err := labs.Render(l.ID, st.Body.In(lg), labs.SampleData(l))
		if err != nil {
			return "", err
		}
		mode := store.ModeGuided
		if l.Challenge {
			mode = store.ModeChallenge
		}
		return newMarkdown().render(text, mode, lg, false)
	}
	return "", fmt.Errorf("lab %s has no step %s", l.ID, step)
}
