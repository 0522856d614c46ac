# The page the learner opens in the browser is there: nginx answers on the
# NodePort (kube-proxy may take a few seconds to open a new one).
for i in $(seq 20); do
  page=$(curl -fsS --max-time 3 http://localhost:30080/ 2>/dev/null) && break
  sleep 1
done
[ -n "$page" ] || { echo "nothing answers on the NodePort 30080 of the control plane"; exit 1; }
echo "$page" | grep -q "Welcome to nginx" || { echo "port 30080 answers, but not with nginx's welcome page"; exit 1; }
grep -q '^http.*PORT' /etc/killercoda/host || { echo "/etc/killercoda/host does not hold the traffic address"; exit 1; }
