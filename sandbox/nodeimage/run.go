package nodeimage

import (
	"archive/tar"
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// runStreaming runs cmd, printing a heartbeat with its latest output line
// while it runs, and returns its last lines in the error when it fails.
func (b *builder) runStreaming(cmd *exec.Cmd, label string) error {
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	var (
		mu   sync.Mutex
		last string
		tail []string
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			mu.Lock()
			last = sc.Text()
			tail = append(tail, last)
			if len(tail) > 25 {
				tail = tail[1:]
			}
			mu.Unlock()
		}
	}()
	start := time.Now()
	stop := b.heartbeat(func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("%s (%s): %s", label, since(start), truncate(last, 100))
	})
	err := cmd.Run()
	stop()
	pw.Close()
	<-done
	if err != nil {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Errorf("%v\n%s", err, strings.Join(tail, "\n"))
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func tarHeaderFor(name string, size int64) *tar.Header {
	return &tar.Header{Name: name, Mode: 0o755, Size: size, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
}
