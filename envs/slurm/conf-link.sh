# Sourced by run-slurm-test.sh (and tests/test_slurm_conf_link.py): the one link the SLURM
# test makes outside its work directory. Inside a job, srun finds no SLURM_CONF (sbatch does
# not pass it on) and reads the default /etc/slurm/slurm.conf, so the test links its own
# config there for the run, never over a real one.
#
# A run killed outright (SIGKILL: its EXIT trap never runs) leaves its link behind, and every
# later run would refuse on it. Such a leftover is told apart from a real setup by all three:
# it is a symlink, it points to slurm.conf in a work directory named claimcheck-slurm.*, and
# no pid file NAME.pid in that directory's run/ names a live process whose command is NAME
# (a pid reused by another program since the kill does not count). Only then is it removed.

# conf_link_is_stale CONF: 0 when CONF is a leftover link of a killed run, as above.
conf_link_is_stale() {
  local conf=$1 target dir pidfile pid
  [ -L "$conf" ] || return 1
  target=$(readlink "$conf")
  dir=$(dirname "$target")
  case "$(basename "$dir")/$(basename "$target")" in
    claimcheck-slurm.*/slurm.conf) ;;
    *) return 1 ;;
  esac
  for pidfile in "$dir"/run/*.pid; do
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile" 2>/dev/null)
    [[ "$pid" =~ ^[0-9]+$ ]] || continue
    kill -0 "$pid" 2>/dev/null || continue
    # a daemon of that run still lives (where /proc cannot say, any live pid counts)
    [ -r "/proc/$pid/comm" ] || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$(basename "$pidfile" .pid)" ] && return 1
  done
  return 0
}

# claim_conf_link CONF TARGET: link CONF to TARGET. Exit status 1, touching nothing, when CONF
# exists and is not a leftover of a killed run; a leftover is removed first, with a line on
# stderr naming it and the work directory it points into (left in place for a look).
claim_conf_link() {
  local conf=$1 target=$2 old
  if [ -e "$conf" ] || [ -L "$conf" ]; then
    if ! conf_link_is_stale "$conf"; then
      echo "$conf exists: this machine has a SLURM setup (or a running test); not touching it" >&2
      return 1
    fi
    old=$(readlink "$conf")
    rm -f "$conf" || return 1
    echo "removed $conf, a link to $old left by a killed run (no daemon of it lives);" \
         "its work directory $(dirname "$old") is left in place" >&2
  fi
  mkdir -p "$(dirname "$conf")" && ln -s "$target" "$conf"
}

# one_cluster_at_a_time LOCK WAIT: hold LOCK (flock on fd 8, released when the shell exits,
# even when killed) so that one SLURM test runs on the machine at a time: /etc/slurm/
# slurm.conf and munge's default socket are shared, so a second test (a second `make test`
# beside the first) waits here, saying so on stderr, for at most WAIT seconds. Exit status 1
# when the wait runs out.
one_cluster_at_a_time() {
  local lock=$1 wait=$2 t0
  if ! [[ "$wait" =~ ^[0-9]+$ ]]; then
    echo "CLAIMCHECK_SLURM_WAIT: must be whole seconds >= 0, got '$wait'" >&2; return 1
  fi
  if ! exec 8>"$lock"; then
    echo "CLAIMCHECK_SLURM_LOCK: cannot open $lock for the lock" >&2; return 1
  fi
  flock -n 8 && return 0
  echo "another SLURM test holds $lock (one cluster per machine): waiting for it to end," \
       "at most $wait s" >&2
  t0=$(date +%s)
  if ! flock -w "$wait" 8; then
    echo "gave up after $wait s: $lock is still held" >&2
    return 1
  fi
  echo "$lock is free after $(( $(date +%s) - t0 )) s" >&2
}
