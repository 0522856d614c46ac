# Lab eviction's checks: the kubepods cgroup and the kernel's OOM lines, on
# cgroup v1 and v2. Setup copies this file to node01 as
# /usr/local/lib/podpath/lab-eviction.sh. PODPATH_ROOT, when set, is a
# folder standing in for / (the lab's tests feed v1 and v2 trees to it).
R=${PODPATH_ROOT:-}

# cg_v2: the node mounts the unified cgroup v2 tree.
cg_v2() { [ -f "$R/sys/fs/cgroup/cgroup.controllers" ]; }

# kp_dir: the folder of the kubepods cgroup, the one all Pods live under
# (v1: in the memory controller's tree). kind runs kubelet with cgroupRoot
# /kubelet and the systemd driver: kubelet.slice/kubelet-kubepods.slice.
kp_dir() {
  if cg_v2; then b=$R/sys/fs/cgroup; else b=$R/sys/fs/cgroup/memory; fi
  for d in "$b/kubelet.slice/kubelet-kubepods.slice" "$b/kubepods.slice" "$b/kubelet/kubepods" "$b/kubepods"; do
    if [ -d "$d" ]; then echo "$d"; return 0; fi
  done
  return 1
}

# kp_limit, kp_usage: the kubepods cgroup's memory limit and usage, in bytes.
kp_limit() { if cg_v2; then cat "$(kp_dir)/memory.max"; else cat "$(kp_dir)/memory.limit_in_bytes"; fi; }
kp_usage() { if cg_v2; then cat "$(kp_dir)/memory.current"; else cat "$(kp_dir)/memory.usage_in_bytes"; fi; }

# pod_uid NAME: the Pod UID of NAME's newest sandbox on this node.
pod_uid() {
  crictl pods --name "^$1\$" -o json | jq -r '.items | max_by(.createdAt | tonumber) | .metadata.uid // empty'
}

# oom_line UID: the kernel's last oom-kill line for a process of the Pod
# UID (the kernel log is the machine's: other clusters' kills are in it too).
oom_line() {
  [ -n "$1" ] || return 0
  dmesg | grep 'oom-kill:' | grep -e "pod$1" -e "pod$(echo "$1" | tr - _)" | tail -1
}

# oom_pid LINE, oom_memcg LINE: the killed PID, and the cgroup whose limit
# was hit.
oom_pid() { sed -n 's/.*,pid=\([0-9]*\),.*/\1/p' <<<"$1"; }
oom_memcg() { sed -n 's/.*oom_memcg=\([^,]*\),.*/\1/p' <<<"$1"; }
