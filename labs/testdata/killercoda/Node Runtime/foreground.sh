echo "waiting for the scenario"; while [ ! -f /tmp/ready ]; do sleep 1; done
