package sandbox

import (
	"fmt"
	"log/slog"
	"strings"

	kindlog "sigs.k8s.io/kind/pkg/log"
)

// kindLogger sends kind's messages to slog, and kind's status lines
// (" • Preparing nodes  ...", " ✓ Preparing nodes") to onStatus, which turns
// them into progress events.
type kindLogger struct {
	log      *slog.Logger
	onStatus func(title string, done, failed bool)
}

func (l kindLogger) Warn(msg string)           { l.log.Warn(strings.TrimSpace(msg), "from", "kind") }
func (l kindLogger) Warnf(f string, a ...any)  { l.Warn(fmt.Sprintf(f, a...)) }
func (l kindLogger) Error(msg string)          { l.log.Error(strings.TrimSpace(msg), "from", "kind") }
func (l kindLogger) Errorf(f string, a ...any) { l.Error(fmt.Sprintf(f, a...)) }
func (l kindLogger) V(level kindlog.Level) kindlog.InfoLogger {
	return kindInfo{l: l, level: level}
}

type kindInfo struct {
	l     kindLogger
	level kindlog.Level
}

func (i kindInfo) Enabled() bool { return i.level <= 1 }

func (i kindInfo) Infof(f string, a ...any) { i.Info(fmt.Sprintf(f, a...)) }

func (i kindInfo) Info(msg string) {
	if !i.Enabled() {
		return
	}
	text := strings.TrimSpace(msg)
	if i.level == 0 && i.l.onStatus != nil {
		switch {
		case strings.HasPrefix(text, "• "):
			i.l.onStatus(strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(text, "• "), "...")), false, false)
		case strings.HasPrefix(text, "✓ "):
			i.l.onStatus(strings.TrimPrefix(text, "✓ "), true, false)
		case strings.HasPrefix(text, "✗ "):
			i.l.onStatus(strings.TrimPrefix(text, "✗ "), true, true)
		}
	}
	i.l.log.Debug(text, "from", "kind")
}
