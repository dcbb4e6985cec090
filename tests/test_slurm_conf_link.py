"""The SLURM test's one link outside its work directory (envs/slurm/conf-link.sh): made
where nothing is, refused over a real config, a foreign link or a running test's link, and
a leftover link of a killed run (its daemons all dead) removed and replaced. A run killed
outright once left its link, and every later run, CI's included, refused on it. Runs the
real shell functions in bash against files under tmp_path; /etc is never touched."""

import os
import subprocess
import time
from pathlib import Path

import pytest

from claimcheck.files.paths import ROOT

SCRIPT = ROOT / "envs" / "slurm" / "conf-link.sh"


def claim(conf: Path, target: Path) -> subprocess.CompletedProcess:
    """claim_conf_link CONF TARGET in bash, as run-slurm-test.sh calls it."""
    return subprocess.run(
        ["bash", "-c", '. "$0"; claim_conf_link "$1" "$2"', str(SCRIPT), str(conf), str(target)],
        capture_output=True, text=True, timeout=30)


def work_dir(root: Path, name: str, pids: dict[str, int] | None = None) -> Path:
    """A test work directory as run-slurm-test.sh makes it: slurm.conf and run/*.pid."""
    w = root / name
    (w / "run").mkdir(parents=True)
    (w / "slurm.conf").write_text("ClusterName=claimcheck\n")
    for daemon, pid in (pids or {}).items():
        (w / "run" / f"{daemon}.pid").write_text(f"{pid}\n")
    return w


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


@pytest.fixture
def etc(tmp_path):
    d = tmp_path / "etc" / "slurm"
    d.mkdir(parents=True)
    return d / "slurm.conf"


def test_links_where_nothing_is(tmp_path, etc):
    new = work_dir(tmp_path, "claimcheck-slurm.new")
    r = claim(etc, new / "slurm.conf")
    assert r.returncode == 0, r.stderr
    assert os.readlink(etc) == str(new / "slurm.conf")
    assert r.stderr == ""


def test_refuses_a_real_config(tmp_path, etc):
    etc.write_text("ClusterName=site\n")
    r = claim(etc, work_dir(tmp_path, "claimcheck-slurm.new") / "slurm.conf")
    assert r.returncode == 1
    assert not etc.is_symlink() and etc.read_text() == "ClusterName=site\n"
    assert f"{etc} exists" in r.stderr


def test_refuses_a_link_that_is_not_a_test_work_directory(tmp_path, etc):
    site = work_dir(tmp_path, "site-slurm")  # no daemons, but not named claimcheck-slurm.*
    etc.symlink_to(site / "slurm.conf")
    r = claim(etc, work_dir(tmp_path, "claimcheck-slurm.new") / "slurm.conf")
    assert r.returncode == 1
    assert os.readlink(etc) == str(site / "slurm.conf")


def test_refuses_the_link_of_a_running_test(tmp_path, etc):
    live = subprocess.Popen(["sleep", "30"])
    try:
        # the pid file is named after the live process's command, as munged.pid is munged's
        running = work_dir(tmp_path, "claimcheck-slurm.run",
                           {"munged": dead_pid(), "sleep": live.pid})
        etc.symlink_to(running / "slurm.conf")
        r = claim(etc, work_dir(tmp_path, "claimcheck-slurm.new") / "slurm.conf")
    finally:
        live.kill()
        live.wait()
    assert r.returncode == 1
    assert os.readlink(etc) == str(running / "slurm.conf")


def test_replaces_the_leftover_of_a_killed_run(tmp_path, etc):
    killed = work_dir(tmp_path, "claimcheck-slurm.old",
                      {"munged": dead_pid(), "slurmctld": dead_pid()})
    etc.symlink_to(killed / "slurm.conf")
    new = work_dir(tmp_path, "claimcheck-slurm.new")
    r = claim(etc, new / "slurm.conf")
    assert r.returncode == 0, r.stderr
    assert os.readlink(etc) == str(new / "slurm.conf")
    assert f"a link to {killed / 'slurm.conf'} left by a killed run" in r.stderr
    assert (killed / "slurm.conf").exists()  # its work directory is left for a look


def test_replaces_a_leftover_whose_work_directory_is_gone(tmp_path, etc):
    etc.symlink_to(tmp_path / "claimcheck-slurm.gone" / "slurm.conf")  # dangling
    new = work_dir(tmp_path, "claimcheck-slurm.new")
    r = claim(etc, new / "slurm.conf")
    assert r.returncode == 0, r.stderr
    assert os.readlink(etc) == str(new / "slurm.conf")


def test_a_pid_reused_by_another_program_does_not_hold_the_link(tmp_path, etc):
    other = subprocess.Popen(["sleep", "30"])  # lives, but is not the slurmctld of that run
    try:
        killed = work_dir(tmp_path, "claimcheck-slurm.old", {"slurmctld": other.pid})
        etc.symlink_to(killed / "slurm.conf")
        r = claim(etc, work_dir(tmp_path, "claimcheck-slurm.new") / "slurm.conf")
    finally:
        other.kill()
        other.wait()
    assert r.returncode == 0, r.stderr
    assert os.readlink(etc) == str(tmp_path / "claimcheck-slurm.new" / "slurm.conf")


def _wait(lock: Path, seconds: int | str) -> subprocess.CompletedProcess:
    """one_cluster_at_a_time LOCK SECONDS in bash, as run-slurm-test.sh calls it."""
    return subprocess.run(
        ["bash", "-c", '. "$0"; one_cluster_at_a_time "$1" "$2"', str(SCRIPT), str(lock),
         str(seconds)], capture_output=True, text=True, timeout=60)


def test_a_second_test_waits_for_the_first(tmp_path):
    lock = tmp_path / "slurm.lock"
    assert _wait(lock, 5).returncode == 0 and _wait(lock, 5).stderr == ""  # free: no word
    # a first test holds the lock for 3 s: the second waits, says so, and goes on after
    holder = subprocess.Popen(["flock", str(lock), "sleep", "3"])
    try:
        time.sleep(0.5)
        r = _wait(lock, 30)
        assert r.returncode == 0, r.stderr
        assert "another SLURM test holds" in r.stderr and "is free after" in r.stderr
        assert holder.poll() is not None  # it went on only once the first had ended
    finally:
        holder.kill()
        holder.wait()


def test_the_wait_runs_out(tmp_path):
    lock = tmp_path / "slurm.lock"
    holder = subprocess.Popen(["flock", str(lock), "sleep", "20"])
    try:
        time.sleep(0.5)
        r = _wait(lock, 1)
        assert r.returncode == 1 and "gave up after 1 s" in r.stderr
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("wait", ["-5", "inf", "2.5", "ten", ""])
def test_an_impossible_wait_is_refused_naming_the_variable(tmp_path, wait):
    r = _wait(tmp_path / "slurm.lock", wait)
    assert r.returncode == 1
    assert f"CLAIMCHECK_SLURM_WAIT: must be whole seconds >= 0, got '{wait}'" in r.stderr


def test_a_lock_that_cannot_be_opened_is_refused_naming_it(tmp_path):
    r = _wait(tmp_path / "no-such-dir" / "slurm.lock", 5)
    assert r.returncode == 1
    assert f"CLAIMCHECK_SLURM_LOCK: cannot open {tmp_path}/no-such-dir/slurm.lock" in r.stderr
