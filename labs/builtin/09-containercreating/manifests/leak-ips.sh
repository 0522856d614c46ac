#!/bin/bash
# Reserve every free address of node01's Pod range in host-local IPAM's store,
# for containers that no longer exist: what a node is left with when sandboxes
# were torn down without a CNI DEL (a crash, a killed runtime, a lost state dir).
set -euo pipefail
conf=/etc/cni/net.d/10-flannel.conflist
net=$(jq -r .name "$conf")
subnet=$(jq -r '.plugins[] | select(.ipam) | .ipam.ranges[0][0].subnet' "$conf")
prefix=${subnet%.*}
dir=/var/lib/cni/networks/$net
mkdir -p "$dir"
for i in $(seq 2 254); do
  f=$dir/$prefix.$i
  [ -e "$f" ] && continue
  printf '%s\r\neth0' "$(head -c 32 /dev/urandom | sha256sum | cut -c1-64)" > "$f"
  touch -d '3 days ago' "$f"
done
