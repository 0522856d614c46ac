package labs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The nodes here run cgroup v1, where labs test proves lab eviction on a
// real cluster. This test feeds the oom-first step's checks the kernel log
// lines and kubepods files they read, on both versions, with a crictl and a
// dmesg that answer from them, so that the v2 paths and the lines that must
// fail are proven too.

const evictionFakes = `#!/bin/sh
case "$(basename "$0") $1" in
"crictl pods") cat "$FAKE/pods.json" ;;
"dmesg "*|"dmesg") cat "$FAKE/dmesg.log" ;;
*) echo "fake: unexpected $0 $*" >&2; exit 2 ;;
esac
`

const rushUID = "1a2b3c4d-0000-4e5f-8a9b-0c1d2e3f4a5b"

func evictionStep(t *testing.T) *Step { return builtinScriptStep(t, "eviction", "oom-first") }

// evictionNode writes a node01 for the scripts: the lab's helper, a
// kubepods cgroup (v1 or v2) with limit and usage, rush's sandbox and the
// kernel log.
func evictionNode(t *testing.T, v2 bool, limit, usage, dmesg string) (root, fake string) {
	t.Helper()
	root, fake = t.TempDir(), t.TempDir()
	write := func(dir, name, data string) { t.Helper(); writeNodeFile(t, dir, name, data) }
	lib, err := builtinFS.ReadFile("builtin/13-eviction/files/eviction.sh")
	if err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(root, "usr/local/lib/podpath"), "lab-eviction.sh", string(lib))
	if v2 {
		kp := filepath.Join(root, "sys/fs/cgroup/kubelet.slice/kubelet-kubepods.slice")
		write(filepath.Join(root, "sys/fs/cgroup"), "cgroup.controllers", "cpu memory pids\n")
		write(kp, "memory.max", limit+"\n")
		write(kp, "memory.current", usage+"\n")
	} else {
		kp := filepath.Join(root, "sys/fs/cgroup/memory/kubelet.slice/kubelet-kubepods.slice")
		write(kp, "memory.limit_in_bytes", limit+"\n")
		write(kp, "memory.usage_in_bytes", usage+"\n")
	}
	write(fake, "crictl", evictionFakes)
	write(fake, "dmesg", evictionFakes)
	write(fake, "dmesg.log", dmesg)
	// Two sandboxes of rush: the newer one is the Pod there now.
	write(fake, "pods.json", `{"items": [
  {"id": "old", "createdAt": "1700000000000000000", "metadata": {"name": "rush", "uid": "99999999-0000-0000-0000-000000000000"}},
  {"id": "new", "createdAt": "1700000100000000000", "metadata": {"name": "rush", "uid": "`+rushUID+`"}}
]}`)
	return root, fake
}

func runNodeScript(t *testing.T, script, root, fake string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "PODPATH_ROOT="+root, "FAKE="+fake, "PATH="+fake+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func oomLine(constraint, memcg, taskUID string, pid string) string {
	base := "/docker/1f2e3d/kubelet.slice/kubelet-kubepods.slice"
	task := base + "/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" + strings.ReplaceAll(taskUID, "-", "_") + ".slice/cri-containerd-abc.scope"
	where := "oom_memcg=" + strings.Replace(memcg, "KP", base, 1)
	if memcg == "" {
		where = "global_oom"
	}
	return "[ 812.345678] oom-kill:constraint=" + constraint + ",nodemask=(null),cpuset=cri-containerd-abc.scope,mems_allowed=0," +
		where + ",task_memcg=" + task + ",task=stress,pid=" + pid + ",uid=0\n" +
		"[ 812.345700] Memory cgroup out of memory: Killed process " + pid + " (stress) total-vm:929332kB, anon-rss:716800kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:1452kB oom_score_adj:1000\n"
}

func TestEvictionOOMFirstCheck(t *testing.T) {
	step := evictionStep(t)
	check := step.Checks[2]
	if len(check.AllOf) == 0 || check.AllOf[0].Probe.Script == nil {
		t.Fatal("oom-first's third check no longer starts with the kernel-log script")
	}
	script := check.AllOf[0].Probe.Script.Script
	answer := step.Checks[len(step.Checks)-1]
	if answer.Probe.Answer == nil || answer.Expect.SameAs == nil || answer.Expect.SameAs.Command == nil {
		t.Fatal("oom-first's last check no longer compares the answer with a command")
	}
	other := "77777777-0000-0000-0000-000000000000"
	cases := []struct {
		name, dmesg string
		pass        bool
		fail, pid   string
	}{
		{"v1 kubepods full, rush's process killed", "[ 1.0] boot\n" + oomLine("CONSTRAINT_MEMCG", "KP", rushUID, "4242"), true, "", "4242"},
		{"the last of two kills of rush counts", oomLine("CONSTRAINT_MEMCG", "KP", rushUID, "4000") + oomLine("CONSTRAINT_MEMCG", "KP", rushUID, "4242"), true, "", "4242"},
		{"another cluster's kill only", oomLine("CONSTRAINT_MEMCG", "KP", other, "5151"), false, "no OOM kill of a process of rush", ""},
		{"an earlier rush's kill only", oomLine("CONSTRAINT_MEMCG", "KP", "99999999-0000-0000-0000-000000000000", "3131"), false, "no OOM kill of a process of rush", ""},
		{"rush hit a limit of its own", oomLine("CONSTRAINT_MEMCG", "KP/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod"+strings.ReplaceAll(rushUID, "-", "_")+".slice/cri-containerd-abc.scope", rushUID, "4242"), false, "not at the kubepods cgroup's limit", "4242"},
		{"the whole machine ran out", oomLine("CONSTRAINT_NONE", "", rushUID, "4242"), false, "not at the kubepods cgroup's limit", "4242"},
		{"nothing in the log", "[ 1.0] boot\n", false, "no OOM kill", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, fake := evictionNode(t, false, "1000", "10", c.dmesg)
			out, err := runNodeScript(t, script, root, fake)
			if c.pass && err != nil {
				t.Fatalf("the check failed (%v):\n%s", err, out)
			}
			if !c.pass {
				if err == nil {
					t.Fatalf("the check passed:\n%s", out)
				}
				if !strings.Contains(out, "FAIL: ") || !strings.Contains(out, c.fail) {
					t.Errorf("output lacks FAIL: ...%s...:\n%s", c.fail, out)
				}
				if !strings.Contains(out, "FAIL[zh]: ") {
					t.Errorf("no Chinese FAIL line:\n%s", out)
				}
			}
			pid, err := runNodeScript(t, answer.Expect.SameAs.Command.Run, root, fake)
			if err != nil && c.pid != "" {
				t.Fatalf("the answer's probe failed (%v): %s", err, pid)
			}
			if got := strings.TrimSpace(pid); got != c.pid {
				t.Errorf("the answer's probe read %q, want %q", got, c.pid)
			}
		})
	}
}

func TestEvictionKubepodsCheckOnBothVersions(t *testing.T) {
	step := evictionStep(t)
	if step.Checks[1].Probe.Script == nil {
		t.Fatal("oom-first's second check is no longer a script")
	}
	script := step.Checks[1].Probe.Script.Script
	const gi = 1 << 30
	cases := []struct {
		name         string
		v2           bool
		limit, usage string
		pass         bool
	}{
		{"v1, 700 MiB of room", false, itoa(600<<20 + 700<<20), itoa(600 << 20), true},
		{"v2, 700 MiB of room", true, itoa(600<<20 + 700<<20), itoa(600 << 20), true},
		{"v1, capped at the machine's memory", false, itoa(24 * gi), itoa(600 << 20), false},
		{"v1, no cap at all", false, "9223372036854771712", itoa(600 << 20), false},
		{"v2, no cap at all", true, "max", itoa(600 << 20), false},
		{"v2, 2 GiB of room", true, itoa(3 * gi), itoa(gi), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, fake := evictionNode(t, c.v2, c.limit, c.usage, "")
			out, err := runNodeScript(t, script, root, fake)
			if c.pass && err != nil {
				t.Fatalf("the check failed (%v):\n%s", err, out)
			}
			if !c.pass && (err == nil || !strings.Contains(out, "FAIL: ") || !strings.Contains(out, "FAIL[zh]: ")) {
				t.Fatalf("the check passed or said nothing (%v):\n%s", err, out)
			}
		})
	}
}

// oom-first's first check: the step takes node01's memory threshold away,
// since kubelet compares it with the kubepods cgroup too and would race the
// kernel. A kubectl here answers configz with the threshold of each case.
func TestEvictionThresholdGoneCheck(t *testing.T) {
	step := evictionStep(t)
	if step.Checks[0].Probe.Script == nil {
		t.Fatal("oom-first's first check is no longer a script")
	}
	script := step.Checks[0].Probe.Script.Script
	cases := []struct {
		name, evictionHard string
		pass               bool
	}{
		{"no memory threshold, as kind has it", `{"nodefs.available": "0%"}`, true},
		{"no evictionHard at all", `null`, true},
		{"a threshold of 0%", `{"memory.available": "0%"}`, true},
		{"a threshold of 0", `{"memory.available": "0"}`, true},
		{"the article's 500Mi", `{"memory.available": "500Mi"}`, false},
		{"1Mi", `{"memory.available": "1Mi"}`, false},
		{"the previous step's threshold", `{"memory.available": "22839Mi"}`, false},
		{"5%", `{"memory.available": "5%"}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := t.TempDir()
			writeNodeFile(t, fake, "kubectl", "#!/bin/sh\n"+
				`case "$*" in *configz*) cat "$FAKE/configz.json" ;; *) echo "fake: unexpected kubectl $*" >&2; exit 2 ;; esac`+"\n")
			writeNodeFile(t, fake, "configz.json", `{"kubeletconfig": {"evictionHard": `+c.evictionHard+`}}`)
			out, err := runNodeScript(t, script, t.TempDir(), fake)
			if c.pass && err != nil {
				t.Fatalf("the check failed (%v):\n%s", err, out)
			}
			if !c.pass && (err == nil || !strings.Contains(out, "FAIL: ") || !strings.Contains(out, "FAIL[zh]: ")) {
				t.Fatalf("the check passed or said nothing (%v):\n%s", err, out)
			}
		})
	}
}
