echo "node01 answers: $(ssh node01 hostname)" | tee /tmp/foreground-typed

