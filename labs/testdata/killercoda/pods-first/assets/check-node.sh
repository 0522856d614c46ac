#!/bin/sh
kubectl get pod hello -n practice -o jsonpath='{.spec.nodeName}{"\n"}'
