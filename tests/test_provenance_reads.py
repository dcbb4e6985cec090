"""Provenance through the typed record only (issue 40 item 5): no module reads
``provenance.raw`` (nor indexes a ``.raw``) outside ``runs/runrecord.py`` but those still
waiting to be converted, each at most as often as :data:`PENDING` says. The list only
shrinks: a module converted (fewer reads than listed) fails here too until its entry is
cut, so a new read can never hide behind an old count."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

import claimcheck
from claimcheck.files.paths import ROOT
from claimcheck.runs.records import validate_provenance
from claimcheck.runs.runrecord import migrate_provenance

PKG = Path(claimcheck.__file__).parent

RAW_READ = re.compile(r"\bprov(?:enance)?\.raw\b|\.raw\[")
"""A read of the record's raw object: ``provenance.raw``, ``prov.raw``, ``x.raw[...]``."""

OWNER = "runs/runrecord.py"
"""The typed record: the one module that reads the raw object."""

PENDING: dict[str, int] = {}
"""Modules still reading the raw object, and how many reads each: convert them through the
record's fields (``Provenance.run_dir``, ``model_config``, ``duration_s``, ``verify``,
``protocol_name``, ``protocol_kind``; ``EngineRecord.weights``, ``extra_args``,
``tensor_parallel_size``, ``recorded``; ``StepRecord.recorded``) and cut their entry."""

WHOLE = {"runs/run.py"}
"""Modules that take the record whole (``Provenance.as_recorded``) to write it out as it is."""


def raw_reads() -> dict[str, int]:
    """Module (relative to the package) -> its reads of the raw object, outside the owner."""
    out = {}
    for f in sorted(PKG.rglob("*.py")):
        rel = f.relative_to(PKG).as_posix()
        n = len(RAW_READ.findall(f.read_text()))
        if n and rel != OWNER:
            out[rel] = n
    return out


def test_the_raw_provenance_is_read_only_where_the_shrinking_list_allows():
    reads = raw_reads()
    assert {k: n for k, n in reads.items() if k not in PENDING} == {}, \
        "new reads of provenance.raw: read a typed field of runs.runrecord.Provenance"
    assert {k: n for k, n in reads.items() if n > PENDING.get(k, 0)} == {}, \
        "more reads than listed: read a typed field of runs.runrecord.Provenance"
    assert {k: n for k, n in PENDING.items() if reads.get(k, 0) < n} == {}, \
        "fewer reads than listed: cut the list to what is left (it only shrinks)"


def test_the_whole_record_is_taken_only_to_be_written_out():
    users = {f.relative_to(PKG).as_posix() for f in PKG.rglob("*.py")
             if ".as_recorded" in f.read_text()} - {OWNER}
    assert users == WHOLE


def test_the_pattern_finds_every_form_of_a_raw_read():
    text = ('a = run.provenance.raw.get("card")\nb = prov.raw["engine"]\n'
            'c = x.raw["k"]\nd = run.provenance.card\ne = st.raw\n')
    assert len(RAW_READ.findall(text)) == 3


def test_the_typed_fields_give_what_the_record_says():
    # a committed run's record, as its provenance.json text says (read here with json)
    path = ROOT / "data/raw/runs/h200-20261129-bf16-dummy-16k-single-stream-2/provenance.json"
    p = validate_provenance(migrate_provenance(json.loads(path.read_text())), str(path))
    assert p.run_dir == "h200-20261129-bf16-dummy-16k-single-stream-2"
    assert p.model_config == "data/raw/models/qwen3.8-27b/config.json"
    assert p.duration_s == pytest.approx(98.403)
    assert p.verify is None and p.complete
    assert (p.protocol_name, p.protocol_kind) == ("single-stream", "bench")
    e = p.engine_config
    assert (e.weights, e.tensor_parallel_size, e.max_num_seqs) == ("dummy", 1, 64)
    assert e.extra_args == ("--gdn-prefill-backend", "triton", "--limit-mm-per-prompt",
                            '{"image":0,"video":0}')
    assert e.recorded["gpu_memory_utilization"] == json.loads(path.read_text())[
        "engine_config"]["gpu_memory_utilization"]
    assert p.steps[0].recorded["dir"] == p.steps[0].dir


def test_a_hand_made_record_fills_the_fields_and_leaves_none_for_what_it_lacks():
    path = ROOT / "data/raw/runs/h200-20261129-bf16-dummy-16k-single-stream-2/provenance.json"
    obj = migrate_provenance(json.loads(path.read_text()))
    made = copy.deepcopy(obj)
    made.update(status="failed", failure="step 1: boom", verify={"steps": [{"index": 0}]})
    made["engine_config"]["extra_args"] = ["--linear-backend", 8]  # a number kept as text
    for k in ("run_dir", "model_config", "duration_s"):
        made.pop(k)
    del made["engine_config"]["tensor_parallel_size"]
    p = validate_provenance(made, "hand-made")
    assert (p.status, p.complete, p.failure) == ("failed", False, "step 1: boom")
    assert p.verify == {"steps": [{"index": 0}]}
    assert (p.run_dir, p.model_config, p.duration_s) == (None, None, None)
    assert p.engine_config.tensor_parallel_size is None
    assert p.engine_config.extra_args == ("--linear-backend", "8")
