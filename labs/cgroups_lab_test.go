package labs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The nodes here run cgroup v1, where labs test proves lab cgroups on real
// clusters. This test feeds the oom-exec check the files of both versions
// (a v1 tree, a v2 tree with memory.oom.group 1 and with 0) and a crictl that
// answers from them, so the v2 paths are proven too.

const crictlFake = `#!/bin/sh
# crictl as the check calls it, answering from $FAKE.
case "$1 $2" in
"pods -q") echo pod1 ;;
"ps -q") cat "$FAKE/running" ;;
"ps -a")
  case "$*" in *exited*) cat "$FAKE/exited" ;; *) cat "$FAKE/running" "$FAKE/exited" ;; esac ;;
"inspect "*) cat "$FAKE/inspect-$2" ;;
*) echo "crictl fake: unexpected $*" >&2; exit 2 ;;
esac
`

// writeNodeFile writes data to dir/name (mode 0755, so scripts run), making
// dir: the node trees the lab scripts' tests feed them.
func writeNodeFile(t *testing.T, dir, name, data string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o755); err != nil {
		t.Fatal(err)
	}
}

type cgroupTree struct {
	v2 bool
	// oomGroup is memory.oom.group (v2), killsCtr and killsPod the
	// oom_kill counters of the container's and the Pod's cgroup.
	oomGroup           string
	killsCtr, killsPod int
	// running is the app container now; exited the earlier ones, with the
	// reason each ended for.
	running string
	exited  map[string]string
}

func (c cgroupTree) build(t *testing.T) (root, fake string) {
	t.Helper()
	root, fake = t.TempDir(), t.TempDir()
	write := func(dir, name, data string) { t.Helper(); writeNodeFile(t, dir, name, data) }
	lib, err := builtinFS.ReadFile("builtin/06-cgroups/files/cgroups.sh")
	if err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(root, "usr/local/lib/podpath"), "lab-cgroups.sh", string(lib))
	pod := "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod1.slice"
	ctr := pod + "/cri-containerd-" + c.running + ".scope"
	if c.v2 {
		write(filepath.Join(root, "sys/fs/cgroup"), "cgroup.controllers", "cpu memory pids\n")
		write(filepath.Join(root, "proc/4242"), "cgroup", "0::"+ctr+"\n")
		write(filepath.Join(root, "sys/fs/cgroup"+ctr), "memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill "+itoa(c.killsCtr)+"\n")
		write(filepath.Join(root, "sys/fs/cgroup"+ctr), "memory.oom.group", c.oomGroup+"\n")
		write(filepath.Join(root, "sys/fs/cgroup"+pod), "memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill "+itoa(c.killsPod)+"\n")
	} else {
		write(filepath.Join(root, "proc/4242"), "cgroup", "12:pids:"+ctr+"\n4:memory:"+ctr+"\n3:cpu,cpuacct:"+ctr+"\n")
		write(filepath.Join(root, "sys/fs/cgroup/memory"+ctr), "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill "+itoa(c.killsCtr)+"\n")
	}
	write(fake, "crictl", crictlFake)
	write(fake, "running", c.running+"\n")
	write(fake, "inspect-"+c.running, `{"info": {"pid": 4242}, "status": {"reason": ""}}`)
	var exited []string
	for id, reason := range c.exited {
		exited = append(exited, id)
		write(fake, "inspect-"+id, `{"info": {"pid": 0}, "status": {"reason": "`+reason+`"}}`)
	}
	list := strings.Join(exited, "\n")
	if list != "" {
		list += "\n"
	}
	write(fake, "exited", list)
	return root, fake
}

func itoa(n int) string { return strconv.Itoa(n) }

// builtinScriptStep is step of built-in lab, for tests that run its node
// scripts here (they need jq, which scripts/lib.sh installs).
func builtinScriptStep(t *testing.T, lab, step string) *Step {
	t.Helper()
	if _, err := exec.LookPath("jq"); err != nil {
		t.Fatal("the lab's scripts need jq (scripts/lib.sh installs it): ", err)
	}
	all, ps := Builtin()
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	l := Find(all, lab)
	if l == nil {
		t.Fatalf("no built-in lab %s", lab)
	}
	s := l.Step(step)
	if s == nil {
		t.Fatalf("lab %s has no step %s", lab, step)
	}
	return s
}

func TestCgroupsOOMCheckOnBothVersions(t *testing.T) {
	step := builtinScriptStep(t, "cgroups", "oom-exec")
	if step.Checks[0].Probe.Script == nil {
		t.Fatal("oom-exec's first check is no longer a script")
	}
	script := step.Checks[0].Probe.Script.Script
	cases := []struct {
		name string
		tree cgroupTree
		pass bool
		fail string
	}{
		{"v1, one process killed, container runs", cgroupTree{killsCtr: 1, running: "c1"}, true, ""},
		{"v1, nothing killed yet", cgroupTree{running: "c1"}, false, "no OOM kill"},
		{"v1, the container restarted", cgroupTree{killsCtr: 1, running: "c2", exited: map[string]string{"c1": "OOMKilled"}}, false, "was restarted"},
		{"v2 oom.group 1, whole container killed and replaced", cgroupTree{v2: true, oomGroup: "1", killsPod: 1, running: "c2", exited: map[string]string{"c1": "OOMKilled"}}, true, ""},
		{"v2 oom.group 1, nothing killed yet", cgroupTree{v2: true, oomGroup: "1", running: "c1"}, false, "no OOM kill"},
		{"v2 oom.group 1, killed but no container ended OOMKilled", cgroupTree{v2: true, oomGroup: "1", killsPod: 1, running: "c2", exited: map[string]string{"c1": "Error"}}, false, "no app container of capped exited OOMKilled"},
		{"v2 singleProcessOOMKill (oom.group 0), one process killed", cgroupTree{v2: true, oomGroup: "0", killsCtr: 1, killsPod: 1, running: "c1"}, true, ""},
		{"v2 oom.group 0, nothing killed", cgroupTree{v2: true, oomGroup: "0", running: "c1"}, false, "no OOM kill"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, fake := c.tree.build(t)
			cmd := exec.Command("bash", "-c", script)
			cmd.Env = append(os.Environ(), "PODPATH_ROOT="+root, "FAKE="+fake, "PATH="+fake+":"+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			if c.pass && err != nil {
				t.Fatalf("the check failed (%v):\n%s", err, out)
			}
			if !c.pass {
				if err == nil {
					t.Fatalf("the check passed:\n%s", out)
				}
				if !strings.Contains(string(out), "FAIL: ") || !strings.Contains(string(out), c.fail) {
					t.Errorf("output lacks FAIL: ...%s...:\n%s", c.fail, out)
				}
				if !strings.Contains(string(out), "FAIL[zh]: ") {
					t.Errorf("no Chinese FAIL line:\n%s", out)
				}
			}
		})
	}
}
