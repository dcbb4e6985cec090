#!/bin/bash
# Carry a lean checkout to the GPU host for one lease: data/raw/runs (most of the checkout's
# bytes) leaves the git index and is ignored through .git/info/exclude, so the working tree
# that travels with each call is small and the bundle's parts are large (fewer calls). The
# files stay on disk here; nothing is committed or deleted. Build the bundle AFTER `on` (its
# parts are sized from the checkout), and run `off` before committing anything.
#   usage: lean-checkout.sh on|off|status
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=data/raw/runs
NAMES=data/raw/lean-run-names.txt
LINE="/$RUNS/"
EXCLUDE=$(git rev-parse --git-path info/exclude)
bytes() {
  PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} python3 -c \
    'from pathlib import Path; from claimcheck.envs.offline import checkout_bytes; print(checkout_bytes(Path(".")))'
}
case "${1:?usage: lean-checkout.sh on|off|status}" in
  on)
    if grep -qxF "$LINE" "$EXCLUDE" 2>/dev/null; then
      echo "lean-checkout: already on ($RUNS out of the index)"; exit 0; fi
    if ! git diff --cached --quiet; then
      echo "lean-checkout: refused: the index holds staged changes; commit or unstage them first" >&2
      exit 2; fi
    if [ -n "$(git status --porcelain -- "$RUNS")" ]; then
      echo "lean-checkout: refused: $RUNS has uncommitted changes; commit them first" >&2
      exit 2; fi
    before=$(bytes)
    git rm -r -q --cached "$RUNS"
    echo "$LINE" >> "$EXCLUDE"
    # the committed runs' names travel (untracked, not ignored) so device.sh measure can
    # reserve them: a new run of a committed card, day, engine and protocol gets a suffix
    find "$RUNS" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort > "$NAMES"
    echo "lean-checkout: on: $RUNS out of the index; checkout $before -> $(bytes) bytes" ;;
  off)
    git reset -q -- "$RUNS"
    rm -f "$NAMES"
    if [ -f "$EXCLUDE" ]; then
      grep -vxF "$LINE" "$EXCLUDE" > "$EXCLUDE.tmp" || true
      mv "$EXCLUDE.tmp" "$EXCLUDE"
    fi
    echo "lean-checkout: off: $RUNS back in the index; checkout $(bytes) bytes" ;;
  status)
    if grep -qxF "$LINE" "$EXCLUDE" 2>/dev/null; then echo on; else echo off; fi ;;
  *)
    echo "usage: lean-checkout.sh on|off|status" >&2; exit 2 ;;
esac
