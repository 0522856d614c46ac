#!/bin/bash
[ "$(kubectl get pod runner -o jsonpath='{.spec.nodeName}')" = node01 ] || { echo "runner does not run on node01"; exit 1; }
ssh node01 crictl ps --name runner --state running -q | grep -q . || { echo "crictl on node01 shows no running runner container"; exit 1; }
