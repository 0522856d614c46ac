package terminal

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podpath/podpath/internal/testenv"
)

// keeperRig runs bash in a real tmux session kept as a node's is (no
// prefix, no status line), on a tmux server of its own, and asks that tmux
// what runs in the foreground, as the server asks a node's.
func keeperRig(t *testing.T) *rig {
	t.Helper()
	tmux := testenv.Command(t, "tmux")
	dir := t.TempDir()
	conf := filepath.Join(dir, "tmux.conf")
	os.WriteFile(conf, []byte("set -g prefix None\nunbind-key -a\nset -g status off\nset -g escape-time 0\nset -g default-terminal screen-256color\n"), 0o644)
	sock := filepath.Join(dir, "tmux.sock")
	cmd := exec.Command(tmux, "-S", sock, "-f", conf, "new-session", "-A", "-s", "main", "PS1='# ' bash --norc --noprofile -i")
	// An empty HISTFILE: bash writes no history as it exits, which it
	// would do after kill-server returns, into a directory being removed.
	cmd.Env = []string{"TERM=xterm-256color", "PATH=/usr/bin:/bin", "HOME=" + dir, "HISTFILE="}
	t.Cleanup(func() {
		// kill-server returns before the server has gone (and unlinked its
		// socket): wait for the process, or TempDir's removal races it.
		out, _ := exec.Command(tmux, "-S", sock, "display-message", "-p", "#{pid}").Output()
		exec.Command(tmux, "-S", sock, "kill-server").Run()
		pid := strings.TrimSpace(string(out))
		for deadline := time.Now().Add(10 * time.Second); pid != "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat("/proc/" + pid); err != nil {
				break
			}
		}
	})
	fg := func(ctx context.Context) (string, bool) {
		out, err := exec.CommandContext(ctx, tmux, "-S", sock, "display-message", "-p", "-t", "main", "#{pane_current_command}").Output()
		name := strings.TrimSpace(string(out))
		return name, err == nil && name != ""
	}
	rg := newRigWith(t, DefaultLimits, cmd, fg)
	rg.tmux, rg.sock = tmux, sock
	// The shell is up once tmux names it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if n, ok := fg(context.Background()); ok && n == "bash" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("tmux did not start bash")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return rg
}

// screen is what the tmux pane shows now, as text.
func (r *rig) screen(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(r.tmux, "-S", r.sock, "capture-pane", "-p", "-t", "main").Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// waitScreen waits until the pane shows want.
func (r *rig) waitScreen(t *testing.T, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := r.screen(t)
		if strings.Contains(s, want) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("the screen never showed %q:\n%s", want, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// foregroundIs waits until the shell's foreground is name.
func (r *rig) foregroundIs(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if n, _ := r.fg(context.Background()); n == name {
			return
		}
		if time.Now().After(deadline) {
			n, _ := r.fg(context.Background())
			t.Fatalf("the foreground is %q, want %q", n, name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A run at a prompt with a half-typed line replaces the line: no Ctrl-C
// ("^C" left on the line), no half-typed text in the command.
func TestRunAtAPromptClearsTheLine(t *testing.T) {
	r := keeperRig(t)
	c := dial(t, r.srv)
	c.hello()
	c.send("echo half")
	r.waitScreen(t, "# echo half")
	c.control(Control{Type: "run", Command: "echo ran-$((40+2))\n", Interrupt: true})
	screen := r.waitScreen(t, "ran-42")
	if strings.Contains(screen, "^C") || strings.Contains(screen, "half") {
		t.Errorf("the run left its mark on the screen:\n%s", screen)
	}
	if !strings.Contains(screen, "echo ran-$((40+2))\nran-42\n") {
		t.Errorf("the command did not run as typed:\n%s", screen)
	}
}

// A run with interrupt stops the program in the foreground, waits for the
// prompt, and types the command whole.
func TestRunInterruptsWhatRuns(t *testing.T) {
	r := keeperRig(t)
	c := dial(t, r.srv)
	c.hello()
	c.send("sleep 600\r")
	r.foregroundIs(t, "sleep")
	c.control(Control{Type: "run", Command: "echo after-$((2+3))", Interrupt: true})
	screen := r.waitScreen(t, "after-5")
	if !strings.Contains(screen, "# echo after-$((2+3))\nafter-5") {
		t.Errorf("the command was not typed whole at the prompt:\n%s", screen)
	}
	r.foregroundIs(t, "bash")
	// Two runs sent at once never interleave their keys.
	c.send("sleep 600\r")
	r.foregroundIs(t, "sleep")
	for i := range 3 {
		c.control(Control{Type: "run", Command: fmt.Sprintf("echo run-%d-$((%d*11))", i, i+1), Interrupt: true})
	}
	screen = r.waitScreen(t, "run-2-33")
	for i := range 3 {
		if want := fmt.Sprintf("# echo run-%d-$((%d*11))\nrun-%d-%d\n", i, i+1, i, (i+1)*11); !strings.Contains(screen, want) {
			t.Errorf("run %d is not whole on the screen (want %q):\n%s", i, want, screen)
		}
	}
}

// Without interrupt a run types into what runs (Killercoda's plain exec):
// cat gets the line.
func TestRunWithoutInterruptTypesIntoTheProgram(t *testing.T) {
	r := keeperRig(t)
	c := dial(t, r.srv)
	c.hello()
	c.send("cat\r")
	r.foregroundIs(t, "cat")
	c.control(Control{Type: "run", Command: "to-cat"})
	r.waitScreen(t, "to-cat\nto-cat")
	if n, _ := r.fg(context.Background()); n != "cat" {
		t.Errorf("the foreground is %q after a run without interrupt, want cat still", n)
	}
}

// Where nothing can tell what runs (no keeper), a run sends Ctrl-C, waits
// a moment, and types: the command still runs whole.
func TestRunWithoutAKeeper(t *testing.T) {
	srv, _ := server(t, DefaultLimits)
	c := dial(t, srv)
	c.hello()
	c.send("sleep 600\r")
	time.Sleep(300 * time.Millisecond)
	c.control(Control{Type: "run", Command: "echo blind-$((3*3))", Interrupt: true})
	c.waitFor("blind-9")
}

// A watcher cannot run commands, even one that controls the terminal; an
// empty command is refused with what to send.
func TestRunRefused(t *testing.T) {
	r := newRig(t, DefaultLimits)
	w := dialMode(t, r.srv, "control")
	w.hello()
	w.control(Control{Type: "run", Command: "echo nope-$((1+1))"})
	w.sync()
	c := dial(t, r.srv)
	c.hello()
	c.control(Control{Type: "run", Command: "  "})
	c.sync()
	c.send("echo fine\r")
	c.waitFor("fine\r\n")
	if strings.Contains(c.output(), "nope-2") {
		t.Error("a watcher's run was typed")
	}
	var errs []string
	for _, ct := range append(w.controls(), c.controls()...) {
		if ct.Type == "error" {
			errs = append(errs, ct.Message)
		}
	}
	if len(errs) != 2 || !strings.Contains(errs[0], "watcher cannot run") || !strings.Contains(errs[1], "run needs a command") {
		t.Errorf("errors: %q", errs)
	}
}
