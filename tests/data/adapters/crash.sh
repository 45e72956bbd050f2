#!/bin/sh
# A deliberately crashing adapter: acks the hello, then dies on the first request.
read -r hello
echo '{"protocol":"w6w-adapter","version":1,"implementation":{"name":"crash-adapter"}}'
read -r line
echo "boom: simulated crash while handling a request" >&2
exit 3
