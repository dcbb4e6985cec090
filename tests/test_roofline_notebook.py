"""notebooks/roofline.ipynb draws every preset given in ``presets`` in one execution (the
workflow's rule ``rooflines``: one kernel, not one per preset)."""

import subprocess

import pytest
import yaml

from claimcheck.files.paths import CONFIG, RAW, ROOT
from claimcheck.pipeline.derive import claims_table

pytestmark = pytest.mark.pipeline  # papermill in a subprocess: make pipeline


def test_one_execution_draws_every_preset(tmp_path):
    presets = yaml.safe_load((CONFIG / "config.yaml").read_text())["rooflines"][:2]
    claims = tmp_path / "claims.json"
    claims_table(RAW / "claims.csv", RAW / "cards.csv", tmp_path / "claims.csv", claims)
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({
        "presets": presets, "claims_json": str(claims), "run_records": [],
        "out_base": str(tmp_path / "roofline-{name}")}))
    r = subprocess.run(["papermill", "-k", "python3", str(ROOT / "notebooks/roofline.ipynb"),
                        str(tmp_path / "out.ipynb"), "-f", str(params)],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    pngs = [tmp_path / f"roofline-{p['name']}.png" for p in presets]
    assert len({p.name for p in pngs}) == 2
    for png in pngs:
        assert png.stat().st_size > 10_000 and png.with_suffix(".svg").exists()
    assert pngs[0].read_bytes() != pngs[1].read_bytes()
