# Lab cgroups' checks: where a container's cgroup files are, on cgroup v1
# and v2. The checks source this file on node01 (setup copies it to
# /usr/local/lib/podpath/lab-cgroups.sh). PODPATH_ROOT, when set, is a
# folder standing in for / (the lab's tests feed v1 and v2 trees to it).
R=${PODPATH_ROOT:-}

# cg_v2: the node mounts the unified cgroup v2 tree.
cg_v2() { [ -f "$R/sys/fs/cgroup/cgroup.controllers" ]; }

# cg_dir PID CONTROLLER: the cgroup folder of PID (v2: its one folder; v1:
# its folder in CONTROLLER's tree).
cg_dir() {
  if cg_v2; then
    echo "$R/sys/fs/cgroup$(sed -n 's/^0:://p' "$R/proc/$1/cgroup")"
  else
    echo "$R/sys/fs/cgroup/$2$(grep -E "^[0-9]+:([^:]*,)?$2(,[^:]*)?:" "$R/proc/$1/cgroup" | cut -d: -f3)"
  fi
}

# pod_sandbox NAME: the ready sandbox of the Pod NAME.
pod_sandbox() { crictl pods -q --name "^$1\$" --state ready | head -1; }

# ctr_pid POD CONTAINER: the PID of the Pod's running container.
ctr_pid() {
  c=$(crictl ps -q --name "^$2\$" --pod "$(pod_sandbox "$1")" | head -1)
  [ -n "$c" ] && crictl inspect "$c" | jq -r .info.pid
}

# mem_limit PID: the memory limit the kernel enforces, in bytes.
mem_limit() {
  if cg_v2; then cat "$(cg_dir "$1" memory)/memory.max"; else cat "$(cg_dir "$1" memory)/memory.limit_in_bytes"; fi
}

# cpu_quota PID: the CFS quota, in microseconds per period.
cpu_quota() {
  if cg_v2; then cut -d' ' -f1 "$(cg_dir "$1" cpu)/cpu.max"; else cat "$(cg_dir "$1" cpu)/cpu.cfs_quota_us"; fi
}

# oom_kills DIR: the OOM kills the kernel counted in the cgroup folder DIR
# and below it (v2's memory.events is hierarchical; v1 counts per cgroup).
oom_kills() {
  if cg_v2; then f=$1/memory.events; else f=$1/memory.oom_control; fi
  n=$(awk '$1 == "oom_kill" {print $2}' "$f" 2>/dev/null)
  echo "${n:-0}"
}
