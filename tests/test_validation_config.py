"""Class: units and config. A key given twice in a YAML mapping is refused naming the file
and line (PyYAML alone keeps the last one silently). Copies of the committed config/."""

import pytest

from claimcheck.config.yamlfiles import load_validated
from claimcheck.files.errors import InputError

from ._cli import ROOT, cli, one_line_error

PROTOCOLS = ROOT / "config" / "protocols.yaml"
ENGINES = ROOT / "config" / "engines.yaml"


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """1-based line of the ``nth`` line that starts (after indent) with ``needle``."""
    hits = [i + 1 for i, ln in enumerate(text.splitlines()) if ln.strip().startswith(needle)]
    return hits[nth - 1]


def measure(protocols, engines=ENGINES):
    return cli("measure", "--card", "h200", "--engine", "bf16-dummy", "--protocol", "ladder",
               "--protocols-file", protocols, "--engines-file", engines)


def test_duplicate_protocol_name(tmp_path):
    text = PROTOCOLS.read_text()
    # a second "ladder:" block under protocols (a copy of the first)
    start = text.index("  ladder:\n")
    end = text.index("\n  ", text.index("steps:", start))
    block = text[start:text.index("\n", end + 1) + 1]
    dup = text.replace(block, block + block.replace("concurrency ladder", "ladder again"), 1)
    p = tmp_path / "protocols.yaml"
    p.write_text(dup)
    first, second = line_of(dup, "ladder:"), line_of(dup, "ladder:", 2)
    line = one_line_error(measure(p))
    assert (f"{p}:{second}: not valid YAML: duplicate key 'ladder' (first given on line "
            f"{first})") in line


def test_duplicate_key_inside_an_engine(tmp_path):
    text = ENGINES.read_text()
    dup = text.replace("    max_num_seqs: 64\n", "    max_num_seqs: 64\n    max_num_seqs: 8\n", 1)
    p = tmp_path / "engines.yaml"
    p.write_text(dup)
    first = line_of(dup, "max_num_seqs:")
    line = one_line_error(measure(PROTOCOLS, p))
    assert (f"{p}:{first + 1}: not valid YAML: duplicate key 'max_num_seqs' (first given on "
            f"line {first})") in line


def test_duplicate_top_level_key(tmp_path):
    p = tmp_path / "protocols.yaml"
    p.write_text(PROTOCOLS.read_text() + "protocols: {}\n")
    with pytest.raises(InputError, match=r"protocols.yaml:\d+: not valid YAML: duplicate key "
                                         r"'protocols' \(first given on line 3\)"):
        load_validated(p, "protocols")


def test_unique_copy_still_loads(tmp_path):
    p = tmp_path / "protocols.yaml"
    p.write_text(PROTOCOLS.read_text())
    assert {"hyperqwen-batch", "ladder"} <= set(load_validated(p, "protocols")["protocols"])


def test_an_unknown_model_term_is_refused_naming_its_line(tmp_path):
    p = tmp_path / "protocols.yaml"
    p.write_text(PROTOCOLS.read_text().replace("model_term: decode_rows", "model_term: x9", 1))
    line = one_line_error(measure(p))
    assert f"{p}:{line_of(p.read_text(), 'model_term: x9')}:" in line
    assert "model_term" in line and "'x9'" in line
