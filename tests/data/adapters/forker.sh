#!/bin/sh
# An adapter that forks a long-lived helper (its pid written to $1), then answers every
# request wrongly. When the suite is done, the helper must be gone too (issue 12 item 7:
# the adapter's whole process group is killed).
read -r hello
sleep 300 &
echo $! > "$1"
echo '{"protocol":"w6w-adapter","version":1,"implementation":{"name":"forker-adapter"}}'
while read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/^{"id":\([0-9]*\),.*/\1/p')
  echo "{\"id\":$id,\"response\":{\"ok\":\"wrong\"}}"
done
