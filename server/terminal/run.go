package terminal

import (
	"context"
	"strings"
	"time"
)

// Foreground names the program in the foreground of the shell's terminal
// ("bash" at a prompt), as the session keeper (tmux) sees it; known is false
// where nothing can tell (a node without the keeper).
type Foreground func(ctx context.Context) (name string, known bool)

// Run timing: how long Run waits for a program it interrupted to give the
// prompt back, and how often it looks; without a Foreground to ask, how
// long it lets the interrupt flush pending input before typing.
const (
	runPromptWait  = 2 * time.Second
	runPromptEvery = 50 * time.Millisecond
	runBlindPause  = 250 * time.Millisecond
)

// shells are the programs that, in the foreground, mean a prompt.
var shells = map[string]bool{"bash": true, "sh": true, "dash": true, "zsh": true, "ash": true, "fish": true}

// Run types command into the shell as a "run in terminal" button means it:
// with interrupt, a program left running in the foreground (kubectl get pods
// -w) is stopped first with Ctrl-C, and Run waits until the prompt is back;
// at a prompt, a half-typed line is cleared without Ctrl-C (which would
// leave "^C" on the line); then the command and Enter. Without fg, or where
// it cannot tell, Run sends Ctrl-C (with interrupt), pauses, and types.
// Runs of one shell never interleave.
func (s *Shell) Run(ctx context.Context, fg Foreground, command string, interrupt bool) error {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	command = strings.TrimRight(command, "\r\n")
	name, known := "", false
	if fg != nil {
		name, known = fg(ctx)
	}
	if !known {
		if interrupt {
			if _, err := s.Write([]byte{0x03}); err != nil {
				return err
			}
			if err := sleep(ctx, runBlindPause); err != nil {
				return err
			}
		}
		_, err := s.Write([]byte(command + "\r"))
		return err
	}
	if interrupt && !shells[name] {
		if _, err := s.Write([]byte{0x03}); err != nil {
			return err
		}
		deadline := time.Now().Add(runPromptWait)
		for time.Now().Before(deadline) {
			if err := sleep(ctx, runPromptEvery); err != nil {
				return err
			}
			if n, ok := fg(ctx); ok && shells[n] {
				name = n
				break
			}
		}
	}
	var line []byte
	switch {
	case name == "bash" || name == "zsh" || name == "fish":
		// Line editors: to the end of the line, then delete to its start.
		line = []byte{0x05, 0x15}
	case shells[name]:
		// No line editor: the terminal's own kill character (Ctrl-U).
		line = []byte{0x15}
	}
	_, err := s.Write(append(line, command+"\r"...))
	return err
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
