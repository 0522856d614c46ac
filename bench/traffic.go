package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/podpath/podpath/sandbox"
)

// TrafficOptions tune `podpath bench traffic`.
type TrafficOptions struct {
	Out io.Writer
	// Requests is how many small requests are timed one after another,
	// and how many each of the concurrent clients sends.
	Requests int
	// Clients is how many send at once in the concurrent run.
	Clients int
	// Messages is how many WebSocket echoes are timed.
	Messages int
	// Lab is the lab whose session holds the app.
	Lab string
	// DatabaseURL is the Postgres role that may create the bench's scratch database.
	DatabaseURL string
}

// benchAppPort is the port the bench's app listens on in the node.
const benchAppPort = 18080

// App is the bench's web app, run in a learner's node by `podpath bench
// app`: /small answers 1 KiB, /big?mb=N streams N MB, /ws echoes
// WebSocket messages.
func App(listen string) error {
	small := bytes.Repeat([]byte("x"), 1024)
	chunk := bytes.Repeat([]byte("y"), 1<<20)
	mux := http.NewServeMux()
	mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) { w.Write(small) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("mb"))
		w.Header().Set("Content-Length", strconv.Itoa(n<<20))
		for range n {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		conn, err := (&websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		for {
			kind, msg, err := conn.ReadMessage()
			if err != nil {
				return
			}
			if conn.WriteMessage(kind, msg) != nil {
				return
			}
		}
	})
	return http.ListenAndServe(listen, mux)
}

// trafficPath is one way to the app: straight to the node (the peer), or
// through podpath's traffic host.
type trafficPath struct {
	name   string
	client *http.Client
	base   string // http://host
	header http.Header
	dialer *websocket.Dialer
}

// Traffic measures a learner's web app reached through podpath (traffic
// ports) against the same app reached straight at the node, in one run:
// small-request latency one at a time and with many clients, a large
// download, and WebSocket echo round trips.
func Traffic(ctx context.Context, o TrafficOptions) error {
	if o.Requests <= 0 {
		o.Requests = 500
	}
	if o.Clients <= 0 {
		o.Clients = 20
	}
	if o.Messages <= 0 {
		o.Messages = 1000
	}
	if o.Lab == "" {
		o.Lab = "yaml-to-process"
	}
	out := o.Out
	fmt.Fprintf(out, "machine: %s\n", Machine())
	dbURL, drop, err := scratchDatabase(ctx, o.DatabaseURL)
	if err != nil {
		return err
	}
	defer drop()
	b, err := startBenchServer(ctx, dbURL, nil)
	if err != nil {
		return err
	}
	defer b.stop()
	c := b.c
	fmt.Fprintf(out, "starting a session of %s...\n", o.Lab)
	id, err := c.startSession(ctx, o.Lab)
	if err != nil {
		return err
	}
	var sess struct{ Sandbox struct{ Name string } }
	if err := c.call("GET", "/api/sessions/"+id, nil, &sess); err != nil {
		return err
	}
	target := sandbox.NewManager().Target(sess.Sandbox.Name)

	// The app: this binary, copied into the control plane and started
	// there in the background.
	self, err := os.Executable()
	if err != nil {
		return err
	}
	bin, err := os.Open(self)
	if err != nil {
		return err
	}
	defer bin.Close()
	var stderr bytes.Buffer
	if code, err := target.Exec(ctx, sandbox.ControlPlane, []string{"sh", "-c", "cat > /usr/local/bin/podpath-bench-app && chmod +x /usr/local/bin/podpath-bench-app && setsid -f /usr/local/bin/podpath-bench-app bench app --listen :" + strconv.Itoa(benchAppPort) + " >/dev/null 2>&1"}, bin, io.Discard, &stderr); err != nil || code != 0 {
		return fmt.Errorf("start the bench app on %s: exit %d %v %s", sandbox.ControlPlane, code, err, stderr.String())
	}

	direct := &trafficPath{name: "straight to the node", base: "http://" + sandbox.ControlPlane + ":" + strconv.Itoa(benchAppPort), header: http.Header{}}
	dialNode := func(ctx context.Context, _, _ string) (net.Conn, error) {
		return target.Dial(ctx, sandbox.ControlPlane, benchAppPort)
	}
	direct.client = &http.Client{Transport: &http.Transport{DialContext: dialNode, MaxIdleConnsPerHost: o.Clients}}
	direct.dialer = &websocket.Dialer{NetDialContext: dialNode}
	if err := waitFor(ctx, 30*time.Second, func() bool {
		res, err := direct.client.Get(direct.base + "/small")
		if err == nil {
			res.Body.Close()
		}
		return err == nil && res.StatusCode == 200
	}); err != nil {
		return fmt.Errorf("the bench app does not answer on port %d of %s: %w", benchAppPort, sandbox.ControlPlane, err)
	}

	via, err := c.enterTraffic(ctx, id, benchAppPort, o.Clients)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "app on port %d of %s; through podpath at %s\n", benchAppPort, sandbox.ControlPlane, via.base)

	results := map[string][4]float64{}
	for _, p := range []*trafficPath{direct, via} {
		var r [4]float64
		ds, err := p.sequential(ctx, o.Requests)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		r[0] = float64(percentile(ds, 50))
		fmt.Fprintf(out, "GET of 1 KiB, one at a time, %s, %d requests: p50 %s, p99 %s\n", p.name, len(ds),
			percentile(ds, 50).Round(10*time.Microsecond), percentile(ds, 99).Round(10*time.Microsecond))
		rate, err := p.concurrent(ctx, o.Clients, o.Requests)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		r[1] = rate
		fmt.Fprintf(out, "GET of 1 KiB, %d clients at once, %s: %.0f requests/s\n", o.Clients, p.name, rate)
		mbs, err := p.download(ctx, 200)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		r[2] = mbs
		fmt.Fprintf(out, "download of 200 MB, %s: %.0f MB/s\n", p.name, mbs)
		ws, err := p.echo(ctx, o.Messages)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		r[3] = float64(percentile(ws, 50))
		fmt.Fprintf(out, "WebSocket echo, %s, %d messages: p50 %s, p99 %s\n", p.name, len(ws),
			percentile(ws, 50).Round(10*time.Microsecond), percentile(ws, 99).Round(10*time.Microsecond))
		results[p.name] = r
	}
	d, v := results[direct.name], results[via.name]
	fmt.Fprintf(out, "through podpath against straight to the node: request latency ×%.1f, requests/s ×%.2f, download ×%.2f, WebSocket echo ×%.1f\n",
		v[0]/d[0], v[1]/d[1], v[2]/d[2], v[3]/d[3])
	return nil
}

// enterTraffic signs in to the app's traffic host as a browser does
// (podpath's link, then the entry token traded for the host's cookie) and
// returns the way to it: connections go to podpath's listener, with the
// traffic host's name.
func (c *apiClient) enterTraffic(ctx context.Context, id string, port, conns int) (*trafficPath, error) {
	res, err := c.requestNoRedirect("GET", "/sessions/"+id+"/traffic/"+strconv.Itoa(port)+"/")
	if err != nil {
		return nil, err
	}
	res.Body.Close()
	loc, err := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusSeeOther || err != nil || !strings.HasSuffix(loc.Hostname(), ".localhost") {
		return nil, fmt.Errorf("podpath's traffic link answered %d %q, not a redirect to a *.localhost traffic host", res.StatusCode, res.Header.Get("Location"))
	}
	listener := strings.TrimPrefix(c.base, "http://")
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", listener)
	}
	p := &trafficPath{name: "through podpath", base: "http://" + loc.Host, header: http.Header{}}
	p.client = &http.Client{
		Transport:     &http.Transport{DialContext: dial, MaxIdleConnsPerHost: conns},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	p.dialer = &websocket.Dialer{NetDialContext: dial}
	res, err = p.client.Get(loc.String())
	if err != nil {
		return nil, err
	}
	res.Body.Close()
	for _, ck := range res.Cookies() {
		p.header.Add("Cookie", ck.Name+"="+ck.Value)
	}
	if len(p.header.Values("Cookie")) == 0 {
		return nil, fmt.Errorf("the traffic host's entry set no cookie (%d)", res.StatusCode)
	}
	return p, nil
}

func (c *apiClient) requestNoRedirect(method, path string) (*http.Response, error) {
	req, err := http.NewRequest(method, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return cl.Do(req)
}

// get fetches path and reads the whole body; it fails on anything but 200.
func (p *trafficPath) get(ctx context.Context, path string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", p.base+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header = p.header.Clone()
	res, err := p.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	n, err := io.Copy(io.Discard, res.Body)
	if res.StatusCode != 200 {
		return n, fmt.Errorf("GET %s: %d", path, res.StatusCode)
	}
	return n, err
}

func (p *trafficPath) sequential(ctx context.Context, n int) ([]time.Duration, error) {
	var ds []time.Duration
	for i := 0; i < n+10; i++ {
		start := time.Now()
		if got, err := p.get(ctx, "/small"); err != nil || got != 1024 {
			return nil, fmt.Errorf("GET /small: %d bytes, %v", got, err)
		}
		if i >= 10 { // the first ones warm up connections
			ds = append(ds, time.Since(start))
		}
	}
	return ds, nil
}

func (p *trafficPath) concurrent(ctx context.Context, clients, n int) (float64, error) {
	var wg sync.WaitGroup
	errc := make(chan error, clients)
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				if _, err := p.get(ctx, "/small"); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return 0, err
	}
	return float64(clients*n) / time.Since(start).Seconds(), nil
}

func (p *trafficPath) download(ctx context.Context, mb int) (float64, error) {
	start := time.Now()
	got, err := p.get(ctx, "/big?mb="+strconv.Itoa(mb))
	if err != nil || got != int64(mb)<<20 {
		return 0, fmt.Errorf("GET /big: %d of %d bytes, %v", got, int64(mb)<<20, err)
	}
	return float64(got) / 1e6 / time.Since(start).Seconds(), nil
}

func (p *trafficPath) echo(ctx context.Context, n int) ([]time.Duration, error) {
	conn, res, err := p.dialer.DialContext(ctx, "ws"+strings.TrimPrefix(p.base, "http")+"/ws", p.header)
	if err != nil {
		if res != nil {
			return nil, fmt.Errorf("WebSocket: %w (%d)", err, res.StatusCode)
		}
		return nil, fmt.Errorf("WebSocket: %w", err)
	}
	defer conn.Close()
	var ds []time.Duration
	for i := 0; i < n+10; i++ {
		msg := []byte("echo " + strconv.Itoa(i))
		start := time.Now()
		if err := conn.WriteMessage(websocket.TextMessage, msg); err != nil {
			return nil, err
		}
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, back, err := conn.ReadMessage()
		if err != nil || !bytes.Equal(back, msg) {
			return nil, fmt.Errorf("WebSocket echo %q: %q %v", msg, back, err)
		}
		if i >= 10 {
			ds = append(ds, time.Since(start))
		}
	}
	return ds, nil
}
