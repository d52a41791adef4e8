#!/bin/sh
# Creates the local virtual environment of the Python harness (matplotlib,
# pytest) once; later calls are no-ops.
set -e
venv="$1"
stamp="$venv/.canal-ok"
req="$(dirname "$0")/../bench/harness/requirements.txt"
if [ -f "$stamp" ] && [ "$stamp" -nt "$req" ]; then exit 0; fi
python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check -r "$req"
touch "$stamp"
