package kube

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// podDialer opens TCP connections to a port of a Pod through the host
// cluster's API server (the Pod's portforward subresource), one SPDY
// connection per TCP connection. The server reaches a learner's API server
// this way wherever it runs (in the host cluster or beside it) without a
// listening port and without a hole in the learner cluster's NetworkPolicy;
// a dropped connection is only that connection, the next dial opens a new
// one.
type podDialer struct {
	cs        kubernetes.Interface
	cfg       *rest.Config
	namespace string
	pod       string
	port      int
}

// dialer upgrades to the port-forward protocol as kubectl does: over a
// WebSocket first (API servers since Kubernetes 1.31, and proxies in front
// of them that pass WebSockets but not SPDY), falling back to SPDY where
// the upgrade is refused (an older API server).
func (d podDialer) dialer() (httpstream.Dialer, error) {
	u := d.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(d.namespace).Name(d.pod).SubResource("portforward").URL()
	transport, upgrader, err := spdy.RoundTripperFor(d.cfg)
	if err != nil {
		return nil, err
	}
	viaSPDY := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	viaWebSocket, err := portforward.NewSPDYOverWebsocketDialer(u, d.cfg)
	if err != nil {
		return nil, err
	}
	return portforward.NewFallbackDialer(viaWebSocket, viaSPDY, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	}), nil
}

// DialContext ignores the address it is given: every connection goes to
// the one Pod and port.
func (d podDialer) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	dialer, err := d.dialer()
	if err != nil {
		return nil, err
	}
	type dialed struct {
		conn httpstream.Connection
		err  error
	}
	ch := make(chan dialed, 1)
	go func() {
		conn, proto, err := dialer.Dial(portforward.PortForwardProtocolV1Name)
		if err == nil && proto != portforward.PortForwardProtocolV1Name {
			conn.Close()
			err = fmt.Errorf("port-forward protocol %q, not %q", proto, portforward.PortForwardProtocolV1Name)
		}
		ch <- dialed{conn, err}
	}()
	var conn httpstream.Connection
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("port-forward to %s/%s:%d: %w", d.namespace, d.pod, d.port, r.err)
		}
		conn = r.conn
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.conn != nil {
				r.conn.Close()
			}
		}()
		return nil, ctx.Err()
	}

	headers := http.Header{}
	headers.Set(corev1.StreamType, corev1.StreamTypeError)
	headers.Set(corev1.PortHeader, strconv.Itoa(d.port))
	headers.Set(corev1.PortForwardRequestIDHeader, "0")
	errStream, err := conn.CreateStream(headers)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("port-forward to %s/%s: error stream: %w", d.namespace, d.pod, err)
	}
	errStream.Close() // nothing is written to it
	headers.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := conn.CreateStream(headers)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("port-forward to %s/%s: data stream: %w", d.namespace, d.pod, err)
	}

	// The caller gets one end of an in-memory pipe (deadlines work on it);
	// two copies join the other end to the data stream.
	local, remote := net.Pipe()
	var once sync.Once
	closeAll := func() {
		once.Do(func() {
			remote.Close()
			conn.Close()
		})
	}
	go func() {
		// A message on the error stream (nothing listens on the port, the
		// Pod is gone) ends the connection.
		msg, _ := io.ReadAll(errStream)
		if len(strings.TrimSpace(string(msg))) > 0 {
			closeAll()
		}
	}()
	go func() {
		_, _ = io.Copy(remote, data)
		closeAll()
	}()
	go func() {
		_, _ = io.Copy(data, remote)
		closeAll()
	}()
	go func() {
		<-conn.CloseChan()
		closeAll()
	}()
	return local, nil
}
