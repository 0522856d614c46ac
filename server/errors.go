package server

import (
	"errors"
	"fmt"
	"net/http"
	"sort"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/internal/errs"
)

// statusOf is the HTTP status of each kind of error: the one place where a
// kind becomes a status. Packages below server return kinds (errs).
var statusOf = map[errs.Kind]int{
	errs.Internal:        http.StatusInternalServerError,
	errs.Invalid:         http.StatusBadRequest,
	errs.Unauthenticated: http.StatusUnauthorized,
	errs.Forbidden:       http.StatusForbidden,
	errs.NotFound:        http.StatusNotFound,
	errs.Conflict:        http.StatusConflict,
	errs.Gone:            http.StatusGone,
	errs.TooLarge:        http.StatusRequestEntityTooLarge,
	errs.TooMany:         http.StatusTooManyRequests,
	errs.Unavailable:     http.StatusServiceUnavailable,
}

func statusOfKind(k errs.Kind) int {
	if st, ok := statusOf[k]; ok {
		return st
	}
	return http.StatusInternalServerError
}

// localize says e in the language lg: by its catalog key when it has one,
// else as it was written.
func localize(e *errs.Error, lg string) string {
	if e.Key == "" {
		return e.Message
	}
	names := make([]string, 0, len(e.Args))
	for name := range e.Args {
		names = append(names, name)
	}
	sort.Strings(names)
	var kv []any
	for _, name := range names {
		v := e.Args[name]
		if name == "state" {
			v = translate("wscl_"+v, lg) // a cluster's state, in the board's words
		}
		kv = append(kv, name, v)
	}
	return msg(lg, e.Key, kv...)
}

// refusal reads err as a refusal to show the person who asked: its status,
// its message in lg and the answer's extra fields. A fault of ours (an
// error of no kind, or Internal) is none.
func refusal(err error, lg string) (status int, message string, extra map[string]any, ok bool) {
	if e, found := errs.As(err); found && e.Kind != errs.Internal {
		return statusOfKind(e.Kind), localize(e, lg), e.Detail, true
	}
	return 0, "", nil, false
}

func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	lg := lang(c)
	status, msg, extra, ok := refusal(err, lg)
	var he *echo.HTTPError
	switch {
	case ok:
	case errors.As(err, &he):
		status = he.Code
		msg = fmt.Sprint(he.Message)
		switch status {
		case http.StatusRequestEntityTooLarge:
			msg = translate("errtoolarge", lg)
		case http.StatusNotFound, http.StatusMethodNotAllowed:
			if msg == http.StatusText(status) { // echo's own: no such route
				msg = translate("errnopage", lg)
			}
		}
	default:
		s.log.Error("request failed", "path", c.Request().URL.Path, "err", err)
		status, msg = http.StatusInternalServerError, translate("errinternal", lg)
	}
	if isAPI(c) {
		body := map[string]any{"error": msg}
		for k, v := range extra {
			body[k] = v
		}
		_ = c.JSON(status, body)
		return
	}
	_ = s.pages.render(c, status, "error", s.pageData(c, map[string]any{"Status": status, "Message": msg}))
}
