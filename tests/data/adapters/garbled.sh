#!/bin/sh
# A deliberately garbled adapter: acks the hello, then answers every request with
# something that is not JSON (as a host that logs to stdout would).
read -r hello
echo '{"protocol":"w6w-adapter","version":1,"implementation":{"name":"garbled-adapter"}}'
while read -r line; do
  echo "DEBUG handling a request"
done
