package sandbox

import (
	"strings"
	"testing"

	"github.com/podpath/podpath/labs"
)

// A Killercoda scenario's foreground script is typed into the learner's
// shell through the tmux that keeps it (labs.KeeperTmux): the two must
// name the same socket, configuration and session, or the script would be
// typed into a shell the learner never sees.
func TestKeeperIsTheOneLabsTypeInto(t *testing.T) {
	cmd := strings.Join(KeeperCommand(KeeperSession), " ")
	if want := labs.KeeperTmux + " new-session -A -s " + labs.KeeperSession + " -c /root"; !strings.Contains(cmd, want) {
		t.Errorf("the keeper is\n%s\nand labs type into %q", cmd, want)
	}
}
