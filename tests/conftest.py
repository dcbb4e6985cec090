"""Shared fixtures: paths to the committed data."""

import hashlib
import json
from pathlib import Path

import pytest

from claimcheck.core.seeds import seeds_dir

ROOT = Path(__file__).resolve().parents[1]
QWEN = ROOT / "data" / "raw" / "models" / "qwen3.8-27b" / "config.json"

# The seed articles are not in the repository: they come with the project's shared folder,
# beside the checkout (../shared/seeds), or wherever CLAIMCHECK_SEEDS points.
SEEDS_ABSENT = ("seed articles not found: put the project's shared/seeds folder beside the "
                "checkout (../shared/seeds) or set CLAIMCHECK_SEEDS to it (README, 'Checking "
                "a claim by hand')")
needs_seeds = pytest.mark.skipif(seeds_dir() is None, reason=SEEDS_ABSENT)


@pytest.fixture
def qwen_config_path() -> Path:
    return QWEN


# ---- the committed runs, read once per session -------------------------------------------
# Every test that reads all of data/raw/runs takes these instead of reading the folder again
# (22 runs, about 3-4 s a reading on the 2-core machine). They are shared by every test of the
# session: read them, never change them (copy a run with tests.fabricate.copy_run to edit it).

@pytest.fixture(scope="session")
def committed_runs():
    """Every committed run as :func:`claimcheck.report.record.load_run` reads it, in
    :func:`claimcheck.report.record.find_runs` order (each keeps its
    :class:`claimcheck.runio.runload.LoadedRun` as ``.files``)."""
    from claimcheck.core.paths import RUNS
    from claimcheck.report.record import find_runs, load_run

    runs = tuple(load_run(d) for d in find_runs(RUNS))
    before = _steps_digest(runs)
    yield runs
    assert _steps_digest(runs) == before, "a test changed the shared committed runs' steps"


@pytest.fixture(scope="session")
def committed_run_data(committed_runs):
    """Every committed run as :func:`claimcheck.report.steps.load` reads it (from the run's
    own files, read once), same order."""
    from claimcheck.report import steps as run_steps

    return tuple(run_steps.load(r.path, r) for r in committed_runs)


@pytest.fixture(scope="session")
def committed_runs_with_timeline(committed_runs, committed_run_data):
    """The committed runs with each completed step's row holding the timeline definitions
    (:func:`claimcheck.report.derive.with_timeline`), same order."""
    from claimcheck.report.derive import with_timeline

    runs = tuple(with_timeline(r, d) for r, d in zip(committed_runs, committed_run_data,
                                                      strict=True))
    before = _steps_digest(runs)
    yield runs
    assert _steps_digest(runs) == before, "a test changed the shared committed runs' steps"


def _steps_digest(runs) -> str:
    """A digest of every run's step rows, to tell at the session's end that no test changed
    the shared runs."""
    text = json.dumps([[r.path.name, r.steps] for r in runs], default=repr, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()
