touch /tmp/step1-background
