package grader

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/client-go/rest"
)

// flood is a node whose command prints until it is stopped, as
// `cat ~/.bash_history` does once the learner links it to /dev/zero.
type flood struct{ chunk string }

func (f flood) Exec(ctx context.Context, node string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	for ctx.Err() == nil {
		if _, err := io.WriteString(stdout, f.chunk); err != nil {
			return -1, err
		}
	}
	return -1, ctx.Err()
}

func (flood) RESTConfig(context.Context) (*rest.Config, error) { return nil, errors.New("none") }

func TestProbeOutputIsBounded(t *testing.T) {
	// 3-byte runes and NULs: the cut must land on a rune boundary and the
	// NULs must go, or Postgres refuses the recorded result.
	g := &Grader{target: flood{chunk: "中\x00文"}}
	out, _, _, err := g.nodeShell(context.Background(), "node01", "cat ~/.bash_history", nil)
	if err == nil || !strings.Contains(err.Error(), "output too large") {
		t.Fatalf("error: %v", err)
	}
	if len(out) > MaxOutput || len(out) < MaxOutput/2 {
		t.Errorf("kept %d bytes, want about %d", len(out), MaxOutput)
	}
	if !utf8.ValidString(out) || strings.Contains(out, "\x00") {
		t.Errorf("output is not clean text: valid UTF-8 %v, NUL %v", utf8.ValidString(out), strings.Contains(out, "\x00"))
	}
}

func TestBoundedBufferInvalidUTF8(t *testing.T) {
	b := &boundedBuffer{max: 10, stop: func() {}}
	b.Write([]byte("ok\xff\xfe\x00end"))
	if got := b.String(); got != "ok\uFFFDend" {
		t.Errorf("got %q", got)
	}
}
