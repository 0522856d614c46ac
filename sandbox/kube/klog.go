package kube

import (
	"context"
	"log/slog"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// client-go reports through klog, on stderr, in its own format. Its
// streams say so when one ends because podpath closed it: closing a
// terminal printed three "Unhandled Error" lines ("Copying stdout failed",
// "Websocket Ping failed", ...) among the server's JSON logs, for nothing
// wrong. klog goes to the backend's logger instead, at debug level: there
// when an operator asks for it (PODPATH_LOG_LEVEL=debug), quiet otherwise.
// klog is one per process; the latest backend's logger takes it (a
// process has one backend). The CLI routes it too for the Docker backend,
// whose graders' clients print the same way (a probe while a learner's API
// server is down).
func RouteKlog(log *slog.Logger) {
	klog.SetLogger(logr.FromSlogHandler(demoted{log.Handler()}))
}

// demoted is a slog handler that writes every record at debug level.
type demoted struct{ h slog.Handler }

func (d demoted) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.h.Enabled(ctx, slog.LevelDebug)
}

func (d demoted) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return d.h.Handle(ctx, r)
}

func (d demoted) WithAttrs(a []slog.Attr) slog.Handler { return demoted{d.h.WithAttrs(a)} }
func (d demoted) WithGroup(n string) slog.Handler      { return demoted{d.h.WithGroup(n)} }
