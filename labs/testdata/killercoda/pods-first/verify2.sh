test -s /opt/answer.txt || { echo "/opt/answer.txt is missing or empty"; exit 1; }
[ "$(cat /opt/answer.txt)" = "$(kubectl get pod hello -n practice -o jsonpath='{.spec.nodeName}')" ]
