#!/bin/sh
# An adapter that crashes on its very first request, then (restarted by the suite) works:
# it forwards each request to `w6w-sim eval`. Usage: flaky.sh MARKER_FILE W6W_SIM_BINARY
marker=$1
bin=$2
read -r hello
echo '{"protocol":"w6w-adapter","version":1,"implementation":{"name":"flaky-adapter"}}'
while read -r line; do
  if [ ! -e "$marker" ]; then
    : > "$marker"
    echo "first request: crashing on purpose" >&2
    exit 1
  fi
  id=$(printf '%s\n' "$line" | sed -n 's/^{"id":\([0-9]*\),.*/\1/p')
  request=$(printf '%s\n' "$line" | sed -n 's/^{"id":[0-9]*,"request":\(.*\)}$/\1/p')
  response=$(printf '%s\n' "$request" | "$bin" eval)
  echo "{\"id\":$id,\"response\":$response}"
done
