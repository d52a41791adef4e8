#!/bin/sh
# Runs named_server and named_client as two unrelated processes over one
# named channel; fails if either fails. Usage: run-named.sh DIR_OF_PROGRAMS
set -u
dir=${1:-.}
name=canal-example-$$
"$dir/named_server" "$name" &
server=$!
"$dir/named_client" "$name"
client=$?
wait "$server"
server=$?
[ "$client" -eq 0 ] && [ "$server" -eq 0 ]
