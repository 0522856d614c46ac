# Runs when step 2 begins (step 1 passed): marks the Pod for this step.
kubectl label pod hello -n practice stage=two --overwrite
