"""The pipeline as a user runs it: config validation, papermill on any run, nbval catching
a broken notebook, and the Update section's content."""

import json
import subprocess
import sys

import nbformat
import pytest
import yaml

from claimcheck.claims.registryfiles import load_claims
from claimcheck.files.paths import CONFIG, RAW, ROOT, RUNS
from claimcheck.physics.cardfiles import load_cards
from claimcheck.physics.modelfiles import geometry_from_file
from claimcheck.pipeline.derive import claims_table, run_record
from claimcheck.runs.run import find_runs
from claimcheck.runs.tables import with_rooflines
from claimcheck.update.update import render_update
from tests.fabricate import FP8, copy_run
from tests.fabricate import bench as fab_bench


def dry_run_with(tmp_path, old: str, new: str) -> subprocess.CompletedProcess:
    """`snakemake -n` with config.yaml changed in one place."""
    text = (CONFIG / "config.yaml").read_text()
    assert old in text
    bad = tmp_path / "config.yaml"
    bad.write_text(text.replace(old, new, 1))
    return subprocess.run(["snakemake", "-n", "--configfile", str(bad)], cwd=ROOT,
                          capture_output=True, text=True)


@pytest.mark.pipeline  # runs snakemake/papermill/nbval: make pipeline
def test_bad_config_value_refused_before_dag(tmp_path):
    r = dry_run_with(tmp_path, "update_card: h200", "update_card: h900")
    assert r.returncode != 0
    out = r.stdout + r.stderr
    # card names come from the card registry, named in the message
    assert "update_card: unknown card 'h900'" in out and "data/raw/cards.csv" in out
    assert "Job stats" not in out  # refused before any DAG was planned


@pytest.mark.pipeline  # runs snakemake/papermill/nbval: make pipeline
def test_bad_roofline_preset_refused(tmp_path):
    r = dry_run_with(tmp_path, "kv_dtype: fp8", "kv_dtype: fp7")
    assert r.returncode != 0 and "kv_dtype" in r.stdout + r.stderr


@pytest.mark.pipeline  # runs snakemake/papermill/nbval: make pipeline
def test_papermill_measured_notebook_on_any_run(tmp_path):
    # a copy of a run in another place, as a user with a new card would have
    run = copy_run(tmp_path, FP8, "rtx-copy-run")
    record, claims = tmp_path / "run.json", tmp_path / "claims.json"
    run_record(run, RAW / "cards.csv", RAW / "ceilings.csv",
               RAW / "models/qwen3.8-27b/config.json", record)
    claims_table(RAW / "claims.csv", RAW / "cards.csv", tmp_path / "claims.csv", claims)
    out_md = tmp_path / "run.md"
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"run_record": str(record), "claims_json": str(claims),
                                      "out_base": str(tmp_path / "fig"),
                                      "out_md": str(out_md)}))
    r = subprocess.run(["papermill", "-k", "python3", str(ROOT / "notebooks/measured.ipynb"),
                        str(tmp_path / "out.ipynb"), "-f", str(params)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "fig.png").stat().st_size > 10_000
    md = out_md.read_text()
    # streams x 1000 / median TPOT of the kept (second) pass, from its bench.json fields
    bench = fab_bench(run / "steps/00-c64-r2")
    expected = bench["max_concurrency"] * 1000 / bench["median_tpot_ms"]
    assert "dummy weights" in md and f"{expected:,.1f}" in md


@pytest.mark.pipeline  # runs snakemake/papermill/nbval: make pipeline
def test_nbval_fails_a_broken_notebook(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1"),
                nbformat.v4.new_code_cell("raise RuntimeError('planted failure')")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    path = tmp_path / "broken.ipynb"
    nbformat.write(nb, path)
    r = subprocess.run([sys.executable, "-m", "pytest", "--nbval-lax", "-p", "no:cacheprovider",
                        str(path)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert r.returncode == 1, r.stdout[-2000:]
    assert "planted failure" in r.stdout and "1 failed" in r.stdout


def test_source_notebooks_are_output_free_with_one_parameters_cell():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(params) == 1, path
        for line in params[0].source.splitlines():
            if line and not line.startswith("#"):  # a plain default papermill can read,
                name, _, rest = line.partition(" = ")  # its type in a "# type:" comment
                assert name.isidentifier() and ":" not in name, (path, line)
                assert "# type: " in rest, (path, line)
        for c in nb.cells:
            if c.cell_type == "code":
                assert not c.outputs and c.execution_count is None, path


@pytest.fixture(scope="module")
def update_md(committed_records):
    runs = list(committed_records)
    claims = [c.tidy() for c in load_claims()]
    return render_update(runs, claims, "h200", {"claim_map": "claim_map.png"},
                         protocols=["made-up-never-run"])


def test_update_section_content(update_md):
    md = update_md
    assert "(dummy weights)" in md.splitlines()[0]
    for d in find_runs(RUNS):
        prov = json.loads((d / "provenance.json").read_text())
        if prov["card"] != "h200":  # another card's run is never in this card's Update
            assert d.name not in md
            continue
        assert d.name in md
        # every recorded step has its row: streams and requests as the runner recorded them
        # (steps.json, or provenance.json's steps where the runner stopped before writing it)
        steps = (json.loads((d / "steps.json").read_text()) if (d / "steps.json").is_file()
                 else prov["steps"])
        assert steps
        for st in steps:
            assert f"| {st['streams']} | {st['requests']} |" in md
        # every replayed claim gets its sentence
        for cid in prov["protocol_config"]["source_claims"]:
            assert f"- **{cid}**:" in md
        # a section per protocol, named from the record
        assert f"### Protocol `{prov['protocol']}`" in md
        watts = prov["gpu"]["gpus"][0]["power_limit_enforced_w"]
        assert f"power limit {watts:.0f} W enforced" in md
        assert f"vLLM {prov['software']['vllm']}" in md
    assert "### Not run yet" in md and "`made-up-never-run`" in md


def test_claim_map_plots_every_point():
    from claimcheck.figures import plots

    claims = [c.tidy() for c in load_claims()]
    measured = [{"card": "h200", "streams": 64, "aggregate_tok_s": 2941.0},
                {"card": "h200", "streams": 1, "aggregate_tok_s": 66.0}]
    fig = plots.claim_map(claims, measured)
    # data points, not legend handles: offsets of every non-empty scatter collection; each
    # claim whose streams, card, context or weights the registry assumed gets one more (its
    # dashed ring)
    ringed = [c for c in claims if set(c["assumed_fields"].split(","))
              & {"streams", "streams_running", "card", "context_tokens", "prompt_tokens",
                 "output_tokens", "quantization", "checkpoint"}]
    assert ringed  # the shipped registry assumes some of these
    points = sum(len(c.get_offsets()) for c in fig.axes[0].collections)
    assert points == len(claims) + len(measured) + len(ringed)


def test_claim_map_colours_each_verdict_apart():
    from claimcheck.figures import figstyle, plots
    from claimcheck.verdicts.verdicts import KINDS

    claims = [{**c.tidy(), "verdict": KINDS[i % len(KINDS)]}
              for i, c in enumerate(load_claims())]
    fig = plots.claim_map(claims, [], verdicts=list(KINDS))
    legend = {t.get_text() for t in fig.axes[0].get_legend().get_texts()}
    assert set(KINDS) <= legend
    # no two categories share a colour: 15 metric labels fit the palette, 17 do not
    assert len(set(figstyle.colours([f"m{i}" for i in range(15)]).values())) == 15
    with pytest.raises(ValueError):
        figstyle.colours([f"m{i}" for i in range(len(figstyle.PALETTE) + 1)])


def test_dummy_note_names_the_served_geometry(committed_runs):
    cfg_path = RAW / "models/qwen3.8-27b/config.json"
    cfg = json.loads(cfg_path.read_text())
    layers = cfg.get("text_config", cfg)["num_hidden_layers"]
    runs = list(committed_runs)
    geom = geometry_from_file(cfg_path)
    md = render_update([with_rooflines(r, geom, load_cards()) for r in runs],
                       [c.tidy() for c in load_claims()], "h200", {}, model="Qwen3.8-27B",
                       geometry=geom)
    assert f"real Qwen3.8-27B geometry (`config.json`, {layers} layers," in md


@pytest.mark.pipeline  # runs snakemake/papermill/nbval: make pipeline
def test_all_builds_the_timeline_products_for_every_run():
    """`snakemake -n --forceall all` plans one metrics table and one definitions figure per
    run directory, and one model table and one verdicts table, in batches: one run_products
    job (records, metrics tables, definitions figures, model table) and one
    measured_figures job for all runs, never one job per run."""
    r = subprocess.run(["snakemake", "-n", "--forceall", "all", "--quiet", "rules"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    counts = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    assert counts.get("run_products") == 1 and counts.get("measured_figures") == 1
    assert counts.get("verdicts_table") == 1
    assert not {"run_record", "metrics_table", "definitions_figure", "measured",
                "model_table"} & set(counts)
    # every planned output, one a line (a job prints its one-line message, not its lists)
    r = subprocess.run(["snakemake", "--forceall", "--summary", "all"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    outputs = {line.split("\t")[0] for line in r.stdout.splitlines()[1:]}
    for run in find_runs(RUNS):
        for f in (f"data/derived/runs/{run.name}.json", f"data/derived/metrics/{run.name}.csv",
                  f"figures/definitions-{run.name}.png",
                  f"figures/measured-{run.name}.png", f"data/derived/measured/{run.name}.md"):
            assert f in outputs, f
        # per-run figures are PNG only (figstyle.RUN_FORMATS)
        assert f"figures/definitions-{run.name}.svg" not in outputs
    assert "data/derived/model.csv" in outputs
