#!/bin/bash
# The exact commands this project ran on the offline H200 (see envs/offline/README.md).
# Runs in the repository root of the copied working tree on the GPU host.
#   ($VLLM: the engine version, 0.26.0 or 0.33.0, default 0.26.0; its bundle is made here
#   by `snakemake --cores 1 .offline/bundle/vllm-$VLLM` and carried a part per call)
#   device.sh image             before any part: the plan against this host's packages
#                               (what the install would refuse; image-cuda.txt lines whose
#                               version differs here)
#   device.sh receive PART      copy one bundle part and SUMS (carried in $BUNDLE, default
#                               .offline/bundle/vllm-$VLLM/) to /tmp/parts
#   device.sh install           check, reassemble and install the bundle into /tmp/site
#   device.sh extra WHEEL...    an optional wheel the bundle leaves out (bundle-rules.toml),
#                               each sha256 checked against the lock, into /tmp/site
#   device.sh serve ENGINE      start `vllm serve` for ENGINE detached (setsid), no wait
#   device.sh wait              wait for /health alone (HEALTH_TIMEOUT s, default 540), so
#                               a start of 5-6 minutes takes a call of its own
#   device.sh measure ENGINE PROTOCOL...   wait for /health, run protocols, tar runs to $OUT
#                             (CALL_S: this call's seconds; the runner gets SIGINT in time
#                             for what was measured to be written and still come back)
#   device.sh stop              stop the detached server
set -euo pipefail
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export CLAIMCHECK_DERIVED=/tmp/cc-derived
STATE=/tmp/cc-server RUNS=/tmp/cc-runs
cc() { python3 -m claimcheck.cli "$@"; }
case "${1:?}" in
  image)
    PYTHONPATH=$PWD/src python3 -m claimcheck.envs.offline check-image \
      "envs/vllm-${VLLM:-0.26.0}.lock" /tmp/site ;;
  receive)
    b=${BUNDLE:-.offline/bundle/vllm-${VLLM:-0.26.0}}
    mkdir -p /tmp/parts && cp "$b/$2" /tmp/parts/
    [ -f "$b/SUMS" ] && cp "$b/SUMS" /tmp/parts/
    ls -la /tmp/parts ;;
  install)
    bash envs/offline/install-bundle.sh /tmp/parts /tmp/site ;;
  extra)
    lock=envs/vllm-${VLLM:-0.26.0}.lock
    for w in "${@:2}"; do
      h=$(sha256sum "$w" | cut -d' ' -f1)
      grep -q "sha256:$h" "$lock" || { echo "$w: sha256 $h is not in $lock" >&2; exit 1; }
    done
    python3 -m pip install -q --no-deps --no-index --target /tmp/site "${@:2}"
    ls /tmp/site | grep -i -e humming -e "^$(basename "$2" | cut -d- -f1)" || true ;;
  serve)
    cc serve --engine "$2" --state "$STATE" --no-wait ;;
  wait)
    cc wait --state "$STATE" --health-timeout "${HEALTH_TIMEOUT:-540}" ;;
  measure)
    engine=$2; shift 2
    cc wait --state "$STATE" --health-timeout "${HEALTH_TIMEOUT:-540}"
    extra=(); [ -n "${REPEATS:-}" ] && extra=(--repeats "$REPEATS")
    args=(); for p in "$@"; do args+=(--protocol "$p"); done
    # Committed run names are taken: an empty placeholder each, so a new run of the same
    # card, day, engine and protocol gets the runner's -2 suffix, never a committed name.
    # (A lean checkout, lean-checkout.sh, carries their names in data/raw/lean-run-names.txt.)
    shopt -s nullglob
    mkdir -p "$RUNS"; for d in data/raw/runs/*/; do mkdir -p "$RUNS/$(basename "$d")"; done
    shopt -u nullglob
    if [ -f data/raw/lean-run-names.txt ]; then
      while read -r n; do [ -n "$n" ] && mkdir -p "$RUNS/$n"; done < data/raw/lean-run-names.txt
    fi
    budget=$(( ${CALL_S:-570} - SECONDS - 20 ))
    echo "device.sh: ${budget} s left for the protocols in this call"
    rc=0; timeout --signal=INT "$budget" python3 -m claimcheck.cli measure \
      --attach "$STATE" --card "${CARD:-auto}" --engine "$engine" "${args[@]}" "${extra[@]}" \
      --one-client-process --runs-dir "$RUNS" || rc=$?
    if [ -n "${OUT:-}" ]; then
      find "$RUNS" -mindepth 1 -maxdepth 1 -type d -empty -delete
      tar czf "$OUT/runs-$(date -u +%H%M%S).tar.gz" -C "$RUNS" .
      cp "$(ls -t $STATE/server-*.log | head -1)" "$OUT/" 2>/dev/null || true
    fi
    exit $rc ;;
  stop)
    cc stop --state "$STATE" ;;
esac
