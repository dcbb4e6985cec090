"""Shared fixtures: paths to the committed data."""

import hashlib
import json
from pathlib import Path

import pytest

from claimcheck.claims.seedfiles import seeds_dir

ROOT = Path(__file__).resolve().parents[1]
QWEN = ROOT / "data" / "raw" / "models" / "qwen3.8-27b" / "config.json"

# The seed articles are not in the repository: they come with the project's shared folder,
# beside the checkout (../shared/seeds), or wherever CLAIMCHECK_SEEDS points.
SEEDS_ABSENT = ("seed articles not found: put the project's shared/seeds folder beside the "
                "checkout (../shared/seeds) or set CLAIMCHECK_SEEDS to it "
                "(docs/checking-a-claim.md)")
needs_seeds = pytest.mark.skipif(seeds_dir() is None, reason=SEEDS_ABSENT)


@pytest.fixture
def qwen_config_path() -> Path:
    return QWEN


# ---- the committed runs, read once per session -------------------------------------------
# Every test that reads all of data/raw/runs takes these instead of reading the folder again
# (32 runs, about 7 s a reading on the 2-core machine). They are shared by every test of the
# session: read them, never change them (copy a run with tests.fabricate.copy_run to edit it).

# Kept as a session-wide replacement (issue 40 item 4, left): an interface instead would mean
# a run source passed through every CLI command and report function that reads run folders,
# or a module-level hook in runs.run, itself hidden state; this test-only cache changes no
# result (each run is checked unchanged at the session's end) and saves minutes per session.
@pytest.fixture(scope="session", autouse=True)
def committed_runs_read_once():
    """A committed run directory is read once per session: from the first read on,
    ``claimcheck.runs.run.load_run`` of it gives that run (the CLI's ``model`` and
    ``predict``, called in process, read all 32 of them: about 7 s each time). Every other
    directory (the tests' edited copies) is read as ever, and a module that bound
    ``load_run`` at import (``pipeline.derive``, and the tests) reads for real. At the
    session's end every shared run must hold the steps it was read with."""
    import claimcheck.runs.run as rr
    from claimcheck.files.paths import RUNS

    real, read, digests = rr.load_run, {}, {}
    committed = RUNS.resolve()

    def load_run(path, cards=None):
        p = Path(path).resolve()
        if p.parent != committed:
            return real(path, cards)
        if p not in read:
            read[p] = real(p, cards)
            digests[p] = _steps_digest([read[p]])
        return read[p]

    mp = pytest.MonkeyPatch()
    mp.setattr(rr, "load_run", load_run)
    yield
    mp.undo()
    changed = [p.name for p, run in read.items() if _steps_digest([run]) != digests[p]]
    assert not changed, f"a test changed the shared committed runs' steps: {changed}"


@pytest.fixture(scope="session")
def committed_runs():
    """Every committed run as :func:`claimcheck.runs.run.load_run` reads it, in
    :func:`claimcheck.runs.run.find_runs` order (step table and timelines): the session's
    one reading (:func:`committed_runs_read_once`)."""
    import claimcheck.runs.run as rr
    from claimcheck.files.paths import RUNS

    return tuple(rr.load_run(d) for d in rr.find_runs(RUNS))  # checked at the session's end


def runs_started_before(runs, day: str) -> list:
    """The runs whose runner started before ``day`` (``YYYY-MM-DD``, UTC, as provenance's
    ``started_utc`` begins): a test of a path that later runs would take away (a carry, a
    borrowed term) reads the pool as it stood then."""
    return [r for r in runs if r.provenance.started_utc[:10] < day]


@pytest.fixture(scope="session")
def committed_records(committed_runs):
    """The committed runs as their run records hold them: each step's row joined to its
    provenance and roofline (:func:`claimcheck.runs.tables.with_rooflines`, the committed
    model config, cards and ceilings), same order."""
    from claimcheck.files.paths import RAW
    from claimcheck.physics.cardfiles import load_cards, load_ceilings
    from claimcheck.physics.modelfiles import geometry_from_file
    from claimcheck.runs.tables import with_rooflines

    geom = geometry_from_file(QWEN)
    cards, ceilings = load_cards(), load_ceilings(RAW / "ceilings.csv")
    runs = tuple(with_rooflines(r, geom, cards, ceilings) for r in committed_runs)
    before = _steps_digest(runs)
    yield runs
    assert _steps_digest(runs) == before, "a test changed the shared committed runs' steps"


def _steps_digest(runs) -> str:
    """A digest of every run's step rows, to tell at the session's end that no test changed
    the shared runs."""
    text = json.dumps([[r.path.name, r.rows] for r in runs], default=repr, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()
