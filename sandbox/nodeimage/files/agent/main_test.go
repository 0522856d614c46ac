package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// ask runs serve over pipes and sends the requests one after another.
func ask(t *testing.T, limit int, reqs ...string) []string {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- serve(inR, outW, t.TempDir(), limit); outW.Close() }()
	r := bufio.NewReader(outR)
	if l, _ := r.ReadString('\n'); l != "podpath-agent-ready\n" {
		t.Fatalf("greeting %q", l)
	}
	var answers []string
	for i, script := range reqs {
		secs := "5"
		if strings.HasPrefix(script, "#timeout ") {
			secs = strings.Fields(script)[1]
		}
		fmt.Fprintf(inW, "%d %s %d\n%s", i, secs, len(script), script)
		var id, code, no, ne int
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		fmt.Sscanf(line, "%d %d %d %d", &id, &code, &no, &ne)
		o := make([]byte, no)
		e := make([]byte, ne)
		io.ReadFull(r, o)
		io.ReadFull(r, e)
		answers = append(answers, fmt.Sprintf("%d %d out=%q err=%q", id, code, o, e))
	}
	inW.Close()
	if err := <-done; err != io.EOF {
		t.Errorf("serve ended with %v, want EOF", err)
	}
	return answers
}

func TestAgent(t *testing.T) {
	got := ask(t, 1<<20,
		"echo out; echo err >&2; exit 3",
		"cat; echo read-nothing",
		"touch made-here && ls",
		"kill -9 $$",
	)
	want := []string{
		`0 3 out="out\n" err="err\n"`,
		`1 0 out="read-nothing\n" err=""`,
		`2 0 out="made-here\n" err=""`,
		`3 137 out="" err=""`,
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("answer %d = %s, want %s", i, got[i], want[i])
		}
	}
}

func TestAgentCutsOutputAndTime(t *testing.T) {
	start := time.Now()
	got := ask(t, 16,
		"cat /dev/zero | tr '\\0' x",
		"#timeout 0.3\nsleep 30; echo never",
		"echo still-here",
	)
	if !strings.HasPrefix(got[0], `0 `) || !strings.Contains(got[0], `out="xxxxxxxxxxxxxxxx"`) {
		t.Errorf("endless output: %s", got[0])
	}
	if got[1] != `1 137 out="" err=""` {
		t.Errorf("hung command: %s", got[1])
	}
	if got[2] != `2 0 out="still-here\n" err=""` {
		t.Errorf("after a timeout the channel answers: %s", got[2])
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s: the timeout or the cut did not end the commands", d)
	}
}
