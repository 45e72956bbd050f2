#!/bin/sh
# An adapter that acks the hello declaring no capabilities at all: every case is outside its
# profile, so nothing is judged and the run must not pass (D-376).
read -r hello
echo '{"protocol":"w6w-adapter","version":1,"implementation":{"name":"empty-profile"},"capabilities":[]}'
while read -r line; do
  echo '{"id":0,"response":{"ok":true}}'
done
