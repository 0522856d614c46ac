test -s /opt/answer.txt || { echo "/opt/answer.txt is missing or empty"; exit 1; }
[ "$(cat /opt/answer.txt)" = "$(kubectl get pod hello -n practice -o jsonpath='{.spec.nodeName}')" ] || { echo "/opt/answer.txt does not name hello's node"; exit 1; }
# The step's background script ran when the step began.
# (It runs beside the learner, so give it a moment.)
for i in $(seq 30); do
  [ "$(kubectl get pod hello -n practice -o jsonpath='{.metadata.labels.stage}')" = two ] && exit 0
  sleep 1
done
echo "the step's background did not run"; exit 1
