phase=$(kubectl get pod hello -n practice -o jsonpath='{.status.phase}')
if [ "$phase" != Running ]; then
  echo "The Pod hello in namespace practice is not Running (phase: ${phase:-none})"
  exit 1
fi
