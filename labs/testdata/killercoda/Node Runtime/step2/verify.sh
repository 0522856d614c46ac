want=$(ssh node01 crictl ps --name runner -q)
[ -n "$want" ] && [ "$(cat /opt/runner-id 2>/dev/null)" = "$want" ] || { echo "/opt/runner-id does not hold runner's container ID"; exit 1; }
