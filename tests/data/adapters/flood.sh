#!/bin/sh
# An adapter that answers each request with one huge line (about 2 MB) after a flood of
# blank lines: the suite must keep a bounded prefix of it and stay responsive.
read -r hello
echo '{"protocol":"w6w-adapter","version":1,"implementation":{"name":"flood-adapter"}}'
while read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/^{"id":\([0-9]*\),.*/\1/p')
  yes '' | head -n 100000
  printf '{"id":%s,"response":{"ok":"' "$id"
  head -c 2000000 /dev/zero | tr '\0' 'x'
  printf '"}}\n'
done
