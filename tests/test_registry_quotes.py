"""``claimcheck claims --check`` against the seed articles, on copies of the real registry.

Each broken copy must fail with exit code 2 and a message naming the line and field; the
shipped registry must pass; without the seeds the check must say it skipped the quotes.
"""

import csv
import io

from claimcheck.claims.claims import COLUMNS
from claimcheck.claims.seeds import find_section, parse_seed
from claimcheck.cli import main
from claimcheck.files.paths import RAW

from .conftest import needs_seeds


def _edit(tmp_path, changes):
    rows = list(csv.DictReader(io.StringIO((RAW / "claims.csv").read_text(), newline="")))
    lines = {}
    for i, r in enumerate(rows):
        if r["id"] in changes:
            r.update(changes[r["id"]])
            lines[r["id"]] = i + 2
    assert set(lines) == set(changes)
    p = tmp_path / "claims.csv"
    with p.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(COLUMNS), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return p, lines


def _check(p, capsys) -> tuple[int, str]:
    rc = main(["claims", "--check", "--file", str(p)])
    out = capsys.readouterr()
    return rc, out.out + out.err


@needs_seeds
def test_shipped_registry_passes(capsys):
    rc, out = _check(RAW / "claims.csv", capsys)
    assert rc == 0
    assert "claims OK (quotes found in" in out and "exclusions OK" in out


@needs_seeds
def test_quote_not_in_seed(tmp_path, capsys):
    p, lines = _edit(tmp_path, {"hyperqwen-cohort-8": {
        "quote": "HyperQwen's cohort table shows 321.0 tok/s at eight concurrent chat requests."}})
    rc, out = _check(p, capsys)
    assert rc == 2
    assert f"claims.csv:{lines['hyperqwen-cohort-8']}: quote: quote not found in seed 000 " \
           "section 'One weight read, shared by every stream'" in out


@needs_seeds
def test_quote_in_the_wrong_section_says_where_it_is(tmp_path, capsys):
    p, lines = _edit(tmp_path, {"ninfer-71-nospec-8k": {"section": "Where the line bends"}})
    rc, out = _check(p, capsys)
    assert rc == 2
    assert f":{lines['ninfer-71-nospec-8k']}: quote:" in out
    assert "it is in section 'One weight read, shared by every stream'" in out


@needs_seeds
def test_value_not_in_quote(tmp_path, capsys):
    p, lines = _edit(tmp_path, {"hyperqwen-cohort-8": {"value": "312.0"}})
    rc, out = _check(p, capsys)
    assert rc == 2
    assert f":{lines['hyperqwen-cohort-8']}: value: value 312.0 does not occur in its quote" in out


@needs_seeds
def test_reproduction_checkpoint_on_the_publishers_run(tmp_path, capsys):
    # the dbirks checkpoint is the article's reproduction's; the front page does not state it
    ck = "dbirks/Qwen3.8-27B-W4A16-AutoRound"
    p, lines = _edit(tmp_path, {"hyperqwen-1035-front": {"checkpoint": ck},
                                "hyperqwen-948-front-e2e": {"checkpoint": ck}})
    rc, out = _check(p, capsys)
    assert rc == 2
    line = min(lines.values())
    assert f":{line}: checkpoint: stated {ck!r} is not in section" in out
    assert "move it to assumed" in out


@needs_seeds
def test_draft_count_from_elsewhere_typed_as_stated(tmp_path, capsys):
    # 7 drafts belong to seed 002's reproduction and the B200 control, not HyperQwen's 127
    p, lines = _edit(tmp_path, {"hyperqwen-127-single": {"spec_draft_tokens": "7"}})
    rc, out = _check(p, capsys)
    assert rc == 2
    assert f":{lines['hyperqwen-127-single']}: spec_draft_tokens: stated 7 is not in " \
           "section 'Measured Results' of seed 001" in out


@needs_seeds
def test_bad_exclusion_names_its_file_and_line(tmp_path, capsys):
    p, _ = _edit(tmp_path, {})
    text = (RAW / "claims_excluded.csv").read_text()
    (tmp_path / "claims_excluded.csv").write_text(
        text.replace("so one stream cannot beat 936 / 16 = 58 tok/s.",
                     "so one stream cannot beat 936 / 16 = 59 tok/s.", 1))
    rc, out = _check(p, capsys)
    assert rc == 2
    assert "claims_excluded.csv:2: quote: quote not found in seed 000" in out


def test_without_seeds_the_check_says_so(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CLAIMCHECK_SEEDS", str(tmp_path / "absent"))
    rc, out = _check(RAW / "claims.csv", capsys)
    assert rc == 0
    assert "quotes NOT checked" in out and "CLAIMCHECK_SEEDS" in out


def test_sections_nest_and_plain_headings_are_found():
    md = ("# Title\nintro 1\n## Alpha: one\na 1\n### Beta\nb 2\n## Gamma\nc 3\n---\n"
          "read at abc1234\n")
    secs, colophon = parse_seed(md)
    assert "b 2" in find_section(secs, "Alpha").text  # a ## section holds its ###
    assert "a 1" in find_section(secs, "Beta").top  # and a ### knows its ## section
    assert "c 3" not in find_section(secs, "Alpha").text
    assert "intro 1" in secs["intro"].text and colophon == "read at abc1234"
    plain = "Title line\n\nOverview\n\nSome text, 127 tok/s.\n\nResults\n\nMore 256.2.\n"
    secs, _ = parse_seed(plain)
    assert find_section(secs, "Overview").text == "Overview Some text, 127 tok/s."
    assert find_section(secs, "Results").text == "Results More 256.2."
    assert find_section(secs, "Nope") is None


@needs_seeds
def test_quantization_the_seed_never_writes_is_refused(tmp_path, capsys):
    # seed 001 calls the 3090 side W4A8 Marlin int8; it never writes W4A16
    p, lines = _edit(tmp_path, {"hyperqwen-127-single": {"quantization": "w4a16"}})
    rc, out = _check(p, capsys)
    assert rc == 2
    assert f"claims.csv:{lines['hyperqwen-127-single']}: quantization: stated quantization " \
           "'w4a16' ('w4a16') is not written in section 'Measured Results' of seed 001 (nor " \
           "where the seed describes run 'hyperqwen-single-user'); if the project supplies " \
           "it, move it to assumed" in out


@needs_seeds
def test_each_part_of_a_mixed_quantization_is_checked(tmp_path, capsys):
    # fafstmobel: "MLP weights in NVFP4 and attention and DeltaNet projections in FP8"
    run = ["cinference-1600-headline", "cinference-1623-fastest-second",
           "cinference-1099-decode", "cinference-989-e2e"]
    p, lines = _edit(tmp_path, {r: {"quantization": "nvfp4-mlp+int8"} for r in run})
    rc, out = _check(p, capsys)
    assert rc == 2
    assert f":{min(lines.values())}: quantization: stated quantization 'nvfp4-mlp+int8' " \
           "('int8') is not written in section 'intro'" in out


@needs_seeds
def test_int8_layers_stated_must_be_written_where_the_run_is(tmp_path, capsys):
    # the cohort section says nothing of int8 activations: 'mlp' cannot be stated there
    p, lines = _edit(tmp_path, {"hyperqwen-cohort-8": {"int8_layers": "mlp"}})
    rc, out = _check(p, capsys)
    assert rc == 2
    assert f":{lines['hyperqwen-cohort-8']}: int8_layers: stated int8_layers 'mlp' needs " \
           "'int8' and 'mlp' in section 'One weight read" in out
