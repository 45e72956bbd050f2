#!/bin/sh
# A deliberately silent adapter: acks the hello, then never answers (exec, so the suite's
# kill reaches the sleeping process itself).
read -r hello
echo '{"protocol":"w6w-adapter","version":1,"implementation":{"name":"silent-adapter"}}'
exec sleep 60
