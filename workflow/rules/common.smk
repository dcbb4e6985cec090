# Shared values and input functions for the rules. Config values the schema cannot check
# (card names, unique preset names) are checked here, before any DAG is built.
import hashlib
import os
import re
import sys
import time
from pathlib import Path

from claimcheck.physics.cardfiles import load_cards, use_user_cards
from claimcheck.claims.seedfiles import seeds_dir
from claimcheck.files.errors import InputError
from claimcheck.pipeline.derive import stale_run_outputs
from claimcheck.pipeline.presets import check_unique_names
from claimcheck.runs.run import find_runs

# One render at a time in a checkout: two started at once both met Snakemake's own lock
# and failed with its traceback. The first holds an flock on RENDER_LOCK for as long as it
# runs (released when its process ends, however it ends); a second is told so in one line.
# Dry runs, --lint and the other commands that run no job take no lock, nor do the job
# processes Snakemake starts itself (cluster jobs).
RENDER_LOCK = Path(".snakemake/claimcheck-render.lock")
_NO_JOBS = {"-n", "--dry-run", "--dryrun", "--lint", "--unlock", "-l", "--list",
            "--list-rules", "--list-target-rules", "--summary", "-S", "--detailed-summary",
            "-D", "--dag", "--rulegraph", "--filegraph", "--d3dag", "--list-changes", "--lc",
            "--cleanup-metadata", "--cm", "--version", "-v", "-h", "--help", "--print-compilation"}


def _runs_jobs(argv):
    """False for a snakemake command line that runs no job (``-n`` also inside ``-pn``)."""
    return not any(a in _NO_JOBS or (a[:1] == "-" and a[1:2] != "-" and "n" in a[1:])
                   for a in argv[1:])


def hold_render_lock(path=RENDER_LOCK):
    """The open lock file, held; exits with one line when another render holds it."""
    import fcntl

    path.parent.mkdir(exist_ok=True)
    f = open(path, "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        who = f.read().strip() or "another process"
        print(f"claimcheck: error: another snakemake run ({who}) is rendering in this "
              f"checkout and holds its lock ({path}); wait for it to end, then run again",
              file=sys.stderr)
        sys.exit(1)
    f.seek(0)
    f.truncate()
    f.write(f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}")
    f.flush()
    return f


if workflow.is_main_process and _runs_jobs(sys.argv):
    _RENDER_LOCK_FILE = hold_render_lock()  # kept open (and locked) until the process ends

# card names come from the card registry and the user cards file merged over it (named in
# the environment, so that every rule script and notebook kernel merges it too)
use_user_cards(config.get("user_cards"))
CARDS = load_cards(config["cards"], config.get("user_cards") or "")


def _check_card(name, key):
    if name not in CARDS:
        known = ", ".join(sorted(CARDS))
        reason = f"unknown card {name!r}; known in {config['cards']}: {known}"
        raise InputError("config/config.yaml", reason, key=key)


def measure_config():
    """The measure: section; only `snakemake measure` needs it."""
    if "measure" not in config:
        reason = "no measure: section (card, engine, protocols); `snakemake measure` needs one"
        raise InputError("config/config.yaml", reason, key="measure")
    return config["measure"]


for _i, _r in enumerate(config["rooflines"]):
    _check_card(_r["card"], f"rooflines[{_i}].card")
    _mem = CARDS[_r["card"]].memory_gib
    if _r.get("free_gib") is not None and _r["free_gib"] >= _mem:
        raise InputError("config/config.yaml", f"{_r['free_gib']:g} GiB free for streams is "
                         f"not below {_r['card']}'s {_mem:g} GiB of memory (cards.csv "
                         "memory_gib), which also holds the weights",
                         key=f"rooflines[{_i}].free_gib")
check_unique_names(config["rooflines"], "config/config.yaml")
if "update_card" in config:
    _check_card(config["update_card"], "update_card")

# A missing input must fail even where an old output exists: Snakemake 9.27 keeps the old
# output without a word (checked: with out.txt made from in.txt, in.txt deleted, `snakemake
# -n` says "Nothing to be done"). Every configured file and every run's provenance.json are
# checked here for that reason; where no output exists yet Snakemake raises its own.
for _key in ("claims", "cards", "ceilings", "weights", "model_config"):
    if not Path(config[_key]).is_file():
        raise InputError("config/config.yaml", f"{config[_key]}: no such file", key=_key)
ROOFLINES = [r["name"] for r in config["rooflines"]]
RUNS_DIR = Path(config["runs_dir"])
if not RUNS_DIR.is_dir():
    raise InputError("config/config.yaml", f"{RUNS_DIR}: no such folder", key="runs_dir")
# Every folder under runs_dir is a run; one without provenance.json is an error.
RUNS = [p.name for p in find_runs(RUNS_DIR)]


def run_provenance(run):
    """One run's provenance.json as a JSON object with an ``engine`` name (the rules read
    it while the workflow loads); anything else is refused in one line naming the file."""
    import json

    path = RUNS_DIR / run / "provenance.json"
    try:
        obj = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as e:
        raise InputError(str(path), f"not valid JSON: {e}") from None
    if not isinstance(obj, dict):
        raise InputError(str(path), f"a run's provenance must be a JSON object, got "
                         f"{type(obj).__name__ if obj is not None else 'null'}")
    if not isinstance(obj.get("engine"), str) or not obj["engine"]:
        raise InputError(str(path), "every run's provenance names its engine (a string)",
                         key="engine")
    return obj


for _run in RUNS:
    run_provenance(_run)
PIPELINE_ENV = "../../envs/pipeline.yaml"


def say(text):
    """A rule's message, or none with `--config job_lists=True` (then Snakemake prints the
    job's input and output lists in its place)."""
    return "" if config.get("job_lists") else text


def _one_of(names):
    """A wildcard pattern matching exactly these names (nothing when there are none), so
    that an unknown target gets Snakemake's own "No rule to produce"."""
    return "|".join(re.escape(n) for n in names) or "(?!)"


wildcard_constraints:
    run=_one_of(RUNS),
    name=_one_of(ROOFLINES),
    target=_one_of(["claim_map", "update", "rooflines"]),

# The package code and its schemas: a change to them rebuilds what they draw or compute.
PACKAGE_SOURCES = sorted(str(p) for p in Path("src/claimcheck").rglob("*")
                         if p.suffix in (".py", ".json", ".md") and "__pycache__" not in p.parts)


def files_hash(paths):
    """sha256 over the names and contents of files (a param: Snakemake reruns a job when
    it changes)."""
    h = hashlib.sha256()
    for f in paths:
        h.update(str(f).encode() + b"\0")
        with open(f, "rb") as fh:
            h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()


# The registry's checks (rule registry_check) run before the claims are read by any rule.
REGISTRY_CHECK = "data/derived/registry_check.txt"
EXCLUDED = str(Path(config["claims"]).parent / "claims_excluded.csv")
_SEEDS = seeds_dir()
SEED_FILES = sorted(str(p) for p in _SEEDS.rglob("*") if p.is_file()) if _SEEDS else []


def run_files(run):
    """Every file of one run directory (the record reads them all), provenance.json always
    named so that a run without it fails the DAG."""
    d = RUNS_DIR / run
    files = {str(d / "provenance.json")}
    files |= {str(p) for p in d.rglob("*") if p.is_file()}
    return sorted(files)


def manifest_input():
    """The runs folder's bench manifest, which every reader checks the bench files against
    (none there: nothing, and every reader refuses a bench file): an input of each rule
    that reads runs, so a line changed or removed remakes what reads them."""
    manifest = RUNS_DIR / "bench-sha256.txt"
    return [str(manifest)] if manifest.is_file() else []


def all_run_files(wildcards=None):
    """Every file of every run directory (the model and verdict tables read them all), and
    the runs folder's bench manifest (:func:`manifest_input`)."""
    return sorted({f for run in RUNS for f in run_files(run)} | set(manifest_input()))


def preset_inputs(wildcards=None):
    """Files the roofline presets read beyond the registries: their weights_runs' start
    logs."""
    return sorted({str(RUNS_DIR / r["weights_run"] / "server-start.log")
                   for r in config["rooflines"] if r.get("weights_run")}
                  | ({config["user_cards"]} if config.get("user_cards") else set()))


# A file a figure reads that is gone fails here, where old figures exist or not (see above:
# Snakemake would keep the old figure without a word when nothing else made it rerun).
for _i, _r in enumerate(config["rooflines"]):
    _log = RUNS_DIR / _r["weights_run"] / "server-start.log" if _r.get("weights_run") else None
    if _log is not None and not _log.is_file():
        raise InputError("config/config.yaml", f"{_log}: no such file (the engine log the "
                         f"preset's weights are read from)", key=f"rooflines[{_i}].weights_run")


RUN_RECORDS = expand("data/derived/runs/{run}.json", run=RUNS)


def update_figure_links():
    """Figure name -> link relative to figures/, for the Update section."""
    links = {"claim_map": "claim_map.png"}
    links |= {f"roofline-{n}": f"roofline-{n}.png" for n in ROOFLINES}
    links |= {f"measured-{r}": f"measured-{r}.png" for r in RUNS}
    # the body's figures of the Update card (CARD_FIGURES, rules/figures.smk)
    links |= {k: f"{Path(v).name}.png" for k, v in CARD_FIGURES.items()}
    links["speculation"] = "speculation.png"  # rule speculation_figure
    return links


def notebook_params(wildcards):
    """Papermill parameters of one notebook target, typed (null for absent)."""
    t = wildcards.target
    common = {"claims_json": "data/derived/claims.json", "run_records": RUN_RECORDS}
    if t == "claim_map":
        return {**common, "verdicts_json": "data/derived/verdicts.json",
                "out_base": "figures/claim_map"}
    if t == "update":
        return {**common, "card": config["update_card"],
                "verdicts_json": "data/derived/verdicts.json",
                "model_csv": "data/derived/model.csv",
                "beforehand_csv": "data/derived/beforehand.csv",
                "speculation_csv": "data/derived/speculation.csv",
                "crossval_csv": "data/derived/crossval.csv",
                "definitions_links": {f"definitions-{r}": f"definitions-{r}.png"
                                      for r in RUNS},
                "protocols_yaml": "config/protocols.yaml",
                "model_config": config["model_config"], "model_name": config["model_name"],
                "figures_links": update_figure_links(), "out_md": "figures/update.md",
                "appendix_md": "figures/update-appendix.md",
                "values_csv": "data/derived/update_values.csv",
                "carried_csv": "data/derived/carried_3090.csv",
                "verdict_figure": "verdicts.png"}
    # "rooflines": every preset in one notebook execution, out_base holding {name}
    return {**common, "presets": config["rooflines"], "presets_source": "config/config.yaml",
            "presets_key": "rooflines",
            "model_config": config["model_config"], "model_name": config["model_name"],
            "cards_csv": config["cards"], "user_cards_csv": config.get("user_cards") or "",
            "ceilings_csv": config["ceilings"],
            "weights_csv": config["weights"], "runs_dir": config["runs_dir"],
            "out_base": "figures/roofline-{name}"}


# Outputs of runs that no longer exist: removed before a run of the workflow.
PER_RUN_OUTPUTS = ["data/derived/runs/{run}.json", "figures/measured-{run}.png",
                   "figures/measured-{run}.svg", "data/derived/measured/{run}.md",
                   "data/derived/metrics/{run}.csv", "data/derived/metrics/{run}.dtypes.json",
                   "figures/definitions-{run}.png", "figures/definitions-{run}.svg"]
# (the per-run .svg names stay listed: a render from before 2026-12-01 wrote them; a CSV's
# .dtypes.json is its companion, files.framefiles)


onstart:
    for _p in stale_run_outputs(PER_RUN_OUTPUTS, RUNS):
        print(f"removing {_p}: its run is no longer in {RUNS_DIR}")
        _p.unlink()


# Rebuild on content change: Snakemake reruns a job when an input is newer than its
# outputs, so an input whose content changed while its modification time went back (git
# checkout, cp -p, a restored backup) would leave stale outputs. Every raw input of this
# checkout is hashed; one whose content differs from the last run's gets the current time.
CONTENT_HASHES = Path(".snakemake/claimcheck-content.json")


def touch_changed_content(paths, store=CONTENT_HASHES):
    """Give the current time to each file whose sha256 differs from ``store``'s, saying
    so when its modification time is not newer than when it was hashed; then record."""
    import json

    try:
        seen = json.loads(store.read_text()) if store.is_file() else {}
    except ValueError:  # a store cut short: hash afresh
        seen = {}
    now = {}
    for f in sorted(set(paths)):
        with open(f, "rb") as fh:
            digest = hashlib.sha256(fh.read()).hexdigest()
        old = seen.get(f)
        if old and old[0] != digest:
            if os.stat(f).st_mtime_ns <= old[1]:
                print(f"note: {f} changed in content but not in modification time; touched "
                      "so that what it feeds rebuilds", file=sys.stderr)
            os.utime(f)
        now[f] = [digest, os.stat(f).st_mtime_ns]
    store.parent.mkdir(exist_ok=True)
    part = store.with_name(f"{store.name}.{os.getpid()}")
    part.write_text(json.dumps(now))
    os.replace(part, store)  # whole or not at all, with several snakemake runs at once


touch_changed_content(
    PACKAGE_SOURCES + all_run_files() + [str(p) for p in Path("notebooks").glob("*.ipynb")]
    + [config[k] for k in ("claims", "cards", "ceilings", "weights", "model_config")]
    + [EXCLUDED, "config/protocols.yaml"]
    + [str(p) for p in Path("data/raw/predictions").glob("*") if p.is_file()]
    + ([config["user_cards"]] if config.get("user_cards") else []))
