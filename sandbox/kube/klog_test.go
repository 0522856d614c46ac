package kube

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
)

// What client-go reports (an "Unhandled Error" when a stream podpath closed
// ends) reaches the backend's logger at debug level, not stderr.
func TestClientGoLogsAtDebug(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if _, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, Options{Namespace: "labs", Installation: "podpath", Image: "podpath/node:x"}, log); err != nil {
		t.Fatal(err)
	}
	utilruntime.HandleError(errors.New("copying stdout failed: use of closed network connection"))
	out := buf.String()
	if !strings.Contains(out, "copying stdout failed") || !strings.Contains(out, `"level":"DEBUG"`) {
		t.Fatalf("client-go's error did not reach the logger at debug level: %q", out)
	}
	if strings.Contains(out, `"level":"ERROR"`) {
		t.Fatalf("client-go's error logged at error level: %q", out)
	}
}
