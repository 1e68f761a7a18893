#!/usr/bin/env bash
# Creates the router benchmark's own virtualenv (default var/bench-venv) with the peer
# routers and the OpenAI client pinned in requirements.txt beside this script. Idempotent:
# an existing venv whose stamp matches requirements.txt is left alone.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${1:-var/bench-venv}"
python="${PYTHON:-python3}"
stamp="$venv/.bench-installed"
if [[ -f "$stamp" ]] && cmp -s "$stamp" "$here/requirements.txt"; then
  exit 0
fi
test -x "$venv/bin/python" || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q -r "$here/requirements.txt"
cp "$here/requirements.txt" "$stamp"
"$venv/bin/python" -m pip freeze | grep -iE '^(sglang-router|vllm-router|openai|httpx)=='
