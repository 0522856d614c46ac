package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/internal/errs"
)

// HTTP deadlines (see docs/SECURITY.md).
//
// http.Server's ReadTimeout is not used: once a handler has read its body,
// net/http keeps reading the connection in the background, and when that
// read hits the deadline it cancels the request's context, which would cut
// off an event stream, a check polling for minutes and a cluster being
// deleted. Instead bodyDeadline bounds receiving the body alone.
const (
	headerTimeout = 10 * time.Second
	// clusterWorkTimeout is the write deadline of routes that wait on a
	// cluster: a step's checks may poll for up to 10 minutes and hold for 5.
	clusterWorkTimeout = 30 * time.Minute
	// streamWriteTimeout bounds each write to an event stream: a client
	// that stops reading is dropped.
	streamWriteTimeout = 30 * time.Second
)

// newHTTPServer is the HTTP server for h with podpath's timeouts.
func (s *Server) newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: min(headerTimeout, s.cfg.HTTPReadTimeout),
		WriteTimeout:      s.cfg.HTTPWriteTimeout,
		IdleTimeout:       s.cfg.HTTPIdleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
}

// bodyDeadline gives a request HTTPReadTimeout to deliver its body, and
// lifts the deadline once the body has been read to its end.
func (s *Server) bodyDeadline(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Body == nil || r.Body == http.NoBody {
			return next(c)
		}
		rc := http.NewResponseController(c.Response())
		if err := rc.SetReadDeadline(time.Now().Add(s.cfg.HTTPReadTimeout)); err == nil {
			r.Body = &deadlineBody{ReadCloser: r.Body, lift: func() { _ = rc.SetReadDeadline(time.Time{}) }}
		}
		return next(c)
	}
}

type deadlineBody struct {
	io.ReadCloser
	lift func()
	once sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.once.Do(b.lift)
	}
	return n, err
}

// clusterWork gives a route that waits on a cluster a longer write deadline
// than ordinary responses get.
func clusterWork(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		_ = http.NewResponseController(c.Response()).SetWriteDeadline(time.Now().Add(clusterWorkTimeout))
		return next(c)
	}
}

// streamDeadlines lifts the server's write deadline from an event stream
// and returns what to call before each write: every write gets its own.
func streamDeadlines(c echo.Context) func() {
	rc := http.NewResponseController(c.Response())
	_ = rc.SetWriteDeadline(time.Time{})
	return func() { _ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout)) }
}

// streamCounter caps the event streams each user holds open.
type streamCounter struct {
	mu   sync.Mutex
	max  int
	open map[int64]int
}

func newStreamCounter(max int) *streamCounter {
	return &streamCounter{max: max, open: map[int64]int{}}
}

// acquire counts a new stream of the user, or says why it is refused; the
// returned func releases it.
func (sc *streamCounter) acquire(user int64) (func(), error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.open[user] >= sc.max {
		return nil, errs.E(errs.TooMany, fmt.Sprintf("you have %d event streams open, the most allowed: close other lab tabs and reload", sc.max))
	}
	sc.open[user]++
	var once sync.Once
	return func() {
		once.Do(func() {
			sc.mu.Lock()
			defer sc.mu.Unlock()
			if sc.open[user]--; sc.open[user] <= 0 {
				delete(sc.open, user)
			}
		})
	}, nil
}
