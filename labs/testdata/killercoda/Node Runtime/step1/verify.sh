#!/bin/bash
[ "$(kubectl get pod runner -o jsonpath='{.spec.nodeName}')" = node01 ] || { echo "runner does not run on node01"; exit 1; }
# busybox came from Docker Hub's name: through the registry mirror where there is no internet.
[ "$(kubectl get pod runner -o jsonpath='{.status.containerStatuses[0].image}')" = docker.io/library/busybox:1.36 ] || { echo "runner does not run docker.io/library/busybox:1.36"; exit 1; }
ssh node01 crictl ps --name runner --state running -q | grep -q . || { echo "crictl on node01 shows no running runner container"; exit 1; }
# The intro's foreground script was typed into the learner's shell, and ran.
for i in $(seq 30); do grep -q "node01 answers: node01" /tmp/foreground-typed 2>/dev/null && break; sleep 1; done
grep -q "node01 answers: node01" /tmp/foreground-typed 2>/dev/null || { echo "the intro's foreground script did not run in the shell"; exit 1; }
# The step's background script ran at setup.
test -e /tmp/step1-background || { echo "step 1's background did not run"; exit 1; }
