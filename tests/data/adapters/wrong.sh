#!/bin/sh
# A deliberately wrong adapter: speaks the protocol correctly, answers every request
# with {"ok": "wrong"}. The suite must report every case red, with the differing field.
read -r hello
echo '{"protocol":"w6w-adapter","version":1,"implementation":{"name":"wrong-adapter","version":"0.0.1"}}'
while read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/^{"id":\([0-9]*\),.*/\1/p')
  echo "{\"id\":$id,\"response\":{\"ok\":\"wrong\"}}"
done
