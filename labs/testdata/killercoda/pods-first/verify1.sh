phase=$(kubectl get pod hello -n practice -o jsonpath='{.status.phase}')
if [ "$phase" != Running ]; then
  echo "The Pod hello in namespace practice is not Running (phase: ${phase:-none})"
  exit 1
fi
image=$(kubectl get pod hello -n practice -o jsonpath='{.status.containerStatuses[0].image}')
case "$image" in
  docker.io/library/nginx:1.27) ;;
  *) echo "hello runs $image, not docker.io/library/nginx:1.27"; exit 1 ;;
esac
