#!/bin/sh
# A host that starts but answers the suite's hello with a line that is not JSON: a broken
# candidate, judged (every case that needs it fails naming the handshake), not a usage error.
read -r hello
echo "not a ready line"
