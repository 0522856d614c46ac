// Command podpath-agent is the node side of a probe channel
// (sandbox/agent.go in podpath has the protocol): a long-lived exec in a
// node that reads probe scripts one after another from stdin and answers
// each with its exit code and both outputs. It runs each script as
// "bash -c SCRIPT" in a process group of its own, stdin from /dev/null, in
// a scratch directory; kills the group when the request's time is up (exit
// code 137, as timeout -s KILL gives); and keeps at most the limit given as
// its only argument of each output, closing the pipe after that so a writer
// of endless output gets SIGPIPE instead of costing the node memory.
//
// It replaces a bash loop that forked timeout, bash, two heads, stat and cat
// for every probe: here a probe costs the one fork of bash.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: podpath-agent MAX_OUTPUT_BYTES")
		os.Exit(2)
	}
	limit, err := strconv.Atoi(os.Args[1])
	if err != nil || limit <= 0 {
		fmt.Fprintln(os.Stderr, "podpath-agent: MAX_OUTPUT_BYTES must be a positive number")
		os.Exit(2)
	}
	os.Setenv("LC_ALL", "C")
	dir, err := os.MkdirTemp("/run", "podpath-probe.")
	if err != nil {
		fmt.Fprintln(os.Stderr, "podpath-agent:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	if err := serve(os.Stdin, os.Stdout, dir, limit); err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintln(os.Stderr, "podpath-agent:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
}

// serve answers requests until stdin ends.
func serve(stdin io.Reader, stdout io.Writer, dir string, limit int) error {
	in := bufio.NewReaderSize(stdin, 64<<10)
	out := bufio.NewWriterSize(stdout, 64<<10)
	if _, err := io.WriteString(out, "podpath-agent-ready\n"); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return err
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return fmt.Errorf("request %q: want <id> <seconds> <bytes>", line)
		}
		secs, err1 := strconv.ParseFloat(f[1], 64)
		n, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil || n < 0 || secs <= 0 {
			return fmt.Errorf("request %q: want <id> <seconds> <bytes>", line)
		}
		script := make([]byte, n)
		if _, err := io.ReadFull(in, script); err != nil {
			return err
		}
		code, o, e := run(dir, string(script), time.Duration(secs*float64(time.Second)), limit)
		fmt.Fprintf(out, "%s %d %d %d\n", f[0], code, len(o), len(e))
		out.Write(o)
		out.Write(e)
		if err := out.Flush(); err != nil {
			return err
		}
	}
}

// run runs one script and returns its exit code and outputs.
func run(dir, script string, timeout time.Duration, limit int) (int, []byte, []byte) {
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	or, ow, err := os.Pipe()
	if err != nil {
		return 126, nil, []byte(err.Error())
	}
	er, ew, err := os.Pipe()
	if err != nil {
		or.Close()
		ow.Close()
		return 126, nil, []byte(err.Error())
	}
	cmd.Stdout, cmd.Stderr = ow, ew
	if err := cmd.Start(); err != nil {
		or.Close()
		ow.Close()
		er.Close()
		ew.Close()
		return 127, nil, []byte(err.Error())
	}
	ow.Close()
	ew.Close()
	pgid := cmd.Process.Pid
	timer := time.AfterFunc(timeout, func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	var wg sync.WaitGroup
	var o, e []byte
	wg.Add(2)
	go func() { defer wg.Done(); o = readUpTo(or, limit) }()
	go func() { defer wg.Done(); e = readUpTo(er, limit) }()
	wg.Wait()
	err = cmd.Wait()
	timer.Stop()
	return exitCode(cmd, err), o, e
}

// readUpTo reads r until EOF or limit bytes, then closes it: past the
// limit the writer's next write fails (SIGPIPE), as with head -c.
func readUpTo(r *os.File, limit int) []byte {
	defer r.Close()
	b, _ := io.ReadAll(io.LimitReader(r, int64(limit)))
	return b
}

func exitCode(cmd *exec.Cmd, err error) int {
	if cmd.ProcessState == nil {
		return 126
	}
	st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok {
		if err != nil {
			return 126
		}
		return 0
	}
	if st.Signaled() {
		return 128 + int(st.Signal())
	}
	return st.ExitStatus()
}
