"""The claims registry: shipped rows validate, broken copies fail naming line and field.

Expected values are the seeds' own arithmetic (764 / 8 lanes, 1000 / 61.2 ms, a B200 server
cap of 48 in flight, NInfer's average batch of 2.36), worked out here by hand.
"""

import csv
import io
import json
import shutil

import pytest

from claimcheck.claims.claims import COLUMNS
from claimcheck.claims.claimtext import bound_backed, numbers_in
from claimcheck.claims.registry import claims_by_id
from claimcheck.claims.registryfiles import load_claims
from claimcheck.cli import main
from claimcheck.files.errors import InputError
from claimcheck.files.paths import RAW
from claimcheck.physics.cardfiles import load_cards


@pytest.fixture(scope="module")
def claims():
    return load_claims(cards=set(load_cards()))


@pytest.fixture(scope="module")
def ids(claims):
    return claims_by_id(claims)


def _rows() -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO((RAW / "claims.csv").read_text(), newline="")))


def _write(tmp_path, rows, columns=COLUMNS):
    p = tmp_path / "claims.csv"
    with p.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(columns), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return p


def _edit(tmp_path, changes: dict[str, dict[str, str]], add: list[dict] | None = None):
    """A copy of the real registry with fields of rows (by id) changed; returns the path and
    each changed id's file line."""
    rows, lines = _rows(), {}
    for i, r in enumerate(rows):
        if r["id"] in changes:
            r.update(changes[r["id"]])
            lines[r["id"]] = i + 2
    assert set(lines) == set(changes)
    for extra in add or []:
        lines[extra["id"]] = len(rows) + 2
        rows.append(extra)
    return _write(tmp_path, rows), lines


def _row(rid: str) -> dict[str, str]:
    return dict(next(r for r in _rows() if r["id"] == rid))


def test_shipped_registry_is_valid(claims, ids):
    assert len(claims) > 100
    for key in ("tensorfold-764-decode", "cinference-1623-fastest-second",
                "hyperqwen-1035-front", "hyperqwen-1094-readme-steady",
                "ninfer-dspine-2439-windows", "b200-control-64", "repro3090-chat-greedy",
                "article-batch-pass2-log", "article-ladder-64-e2e", "article-ladder-64-log"):
        assert key in ids
    assert all(c["quote"] for c in claims)


def test_per_stream_is_derived(ids):
    assert ids["tensorfold-764-decode"].per_stream_tok_s == 764 / 8  # 95.5
    assert round(ids["hyperqwen-1046-demo"].per_stream_tok_s, 1) == 16.3  # 1000 / 61.2 ms
    assert round(ids["ninfer-dspine-2439-windows"].per_stream_tok_s, 1) == 76.2
    warp = ids["qwenwarp-docs-4-req"]  # a per-request figure: aggregate is derived
    assert warp.per_stream_tok_s == 114.8
    assert warp.aggregate_tok_s == pytest.approx(459.2)


def test_streams_running_divides_per_stream_speed(ids):
    b128 = ids["b200-control-128"]  # 128 requested behind max-num-seqs 48
    assert (b128["streams"], b128["streams_running"]) == (128, 48)
    assert b128.per_stream_tok_s == pytest.approx(3417.7 / 48)  # 71.2, not 3417.7/128 = 26.7
    corpus = ids["ninfer-corpus-8slots"]  # 8 slots, average batch 2.36
    assert corpus.per_stream_tok_s == pytest.approx(334.2 / 2.36)
    line = ids["article-long-16-log"]  # 16 streams, 15 running in that log line
    assert (line["streams"], line["streams_running"]) == (16, 15)
    assert line.per_stream_tok_s == pytest.approx(443.0 / 15)
    assert ids["b200-control-32"]["streams_running"] is None  # under the cap: all ran


def test_assumed_is_kept_apart_from_stated(ids):
    c = ids["hyperqwen-cohort-8"]
    assert c.stated["power_limit_w"] is None and c["power_limit_w"] == 250
    value, reason = c.assumed["power_limit_w"]
    assert value == 250 and "250 W" in reason
    assert c.is_assumed("power_limit_w") and not c.is_assumed("streams")
    assert c.tidy()["assumed_fields"] == "power_limit_w"
    # the publisher's rows carry no checkpoint the seed gives only for the reproduction
    assert not ids["hyperqwen-1035-front"]["checkpoint"]
    assert ids["article-ladder-64-e2e"]["checkpoint"].startswith("dbirks/")
    assert not ids["qwenwarp-docs-4-agg"]["checkpoint"]
    assert ids["ninfer-fork-1057-six"].assumed["card"][0] == "rtx5090"


def test_one_meaning_per_column(ids):
    tf = ids["tensorfold-764-decode"]
    assert (tf["engine_version"], tf["code_read"]) == ("", "000b534")
    assert (tf["output_tokens"], tf["total_output_tokens"]) == (None, 8859)
    assert ids["cinference-1099-decode"]["total_output_tokens"] == 14539
    assert ids["ninfer-dspine-2439-windows"]["output_tokens"] == 2048  # per request
    assert ids["article-batch-pass2-e2e"]["engine_version"] == "vLLM 0.33.0"


def test_one_stream_is_single_user_and_phase_unspecified(claims, ids):
    assert {c["stream_relation"] for c in claims if c["streams"] == 1} == {"single_user"}
    assert ids["hyperqwen-cohort-8"]["metric"] == "unspecified"
    assert ids["ninfer-mtp3-8"]["metric"] == "unspecified"


def test_one_run_once(claims):
    # the article's slowest 64-stream run is one run: ladder rows, headline-table row and
    # the engine log line of the run-3090 figure share its run id
    run = sorted(c["id"] for c in claims if c["run"] == "article-ladder-64")
    assert run == ["article-ladder-64-e2e", "article-ladder-64-log",
                   "article-ladder-64-logline", "article-ladder-64-tpot"]
    assert len([c for c in claims if c["value"] == 990.5]) == 1


def test_numbers_in_reads_the_seeds_formatting():
    assert numbers_in("~1,035 tok/s") == [1035]
    assert numbers_in("1.6k tps and 1600tps") == [1600, 1600]
    assert numbers_in("~1,440-1,810 tok/s at 64k") == [1440, 1810, 64000]
    assert numbers_in("3,215.0 vs ~16") == [3215.0, 16]


def test_bad_metric_names_line_and_field(tmp_path):
    p, lines = _edit(tmp_path, {"tensorfold-764-decode": {"metric": "decode_agg"}})
    with pytest.raises(InputError, match=rf"claims.csv:{lines['tensorfold-764-decode']}: "
                                         r"metric: 'decode_agg' is not one of"):
        load_claims(p)


@pytest.mark.parametrize("bad", ["seven", "inf", "nan", "-764", "0"])
def test_bad_value_is_refused_naming_line_and_field(tmp_path, capsys, bad):
    p, lines = _edit(tmp_path, {"tensorfold-764-decode": {"value": bad}})
    assert main(["claims", "--check", "--file", str(p)]) == 2
    err = capsys.readouterr().err
    assert f"claims.csv:{lines['tensorfold-764-decode']}: value:" in err
    assert ("not a number" if bad == "seven" else "must be a finite number > 0") in err


def test_json_is_strict_json(capsys):
    assert main(["claims", "--json"]) == 0
    out = capsys.readouterr().out

    def refuse(name):
        raise AssertionError(f"{name} in --json output")

    rows = json.loads(out, parse_constant=refuse)
    assert {"per_stream_tok_s", "assumed", "assumed_fields", "quote"} <= set(rows[0])


def test_missing_and_directory_file(tmp_path, capsys):
    assert main(["claims", "--file", str(tmp_path / "nope.csv")]) == 2
    assert "nope.csv: no such file" in capsys.readouterr().err
    assert main(["claims", "--file", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_bom_accepted_latin1_refused(tmp_path, capsys):
    text = (RAW / "claims.csv").read_text(encoding="utf-8")
    p = tmp_path / "claims.csv"
    p.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert len(load_claims(p)) == len(_rows())
    p.write_bytes(text.replace("×", "x").replace("·", "-").replace("’", "'")
                  .encode("latin-1", errors="replace") + "é".encode("latin-1"))
    assert main(["claims", "--file", str(p)]) == 2
    err = capsys.readouterr().err
    assert str(p) in err and "not UTF-8" in err


def test_typed_per_stream_column_is_refused(tmp_path):
    rows = [{**r, "per_stream_tok_s": "1"} for r in _rows()]
    p = _write(tmp_path, rows, COLUMNS + ("per_stream_tok_s",))
    with pytest.raises(InputError, match=r":1: per_stream_tok_s: per-stream speed is derived"):
        load_claims(p)


def test_per_stream_figure_typed_as_a_row_is_refused(tmp_path, capsys):
    lane = {**_row("tensorfold-764-decode"), "id": "tensorfold-95-per-lane",
            "metric": "per_request_decode", "value": "95.5",
            "quote": "Per lane it is 764 / 8 = 95.5 tok/s on average,"}
    p, lines = _edit(tmp_path, {}, add=[lane])
    assert main(["claims", "--check", "--file", str(p)]) == 2
    err = capsys.readouterr().err
    assert f":{lines['tensorfold-95-per-lane']}: value: 95.5 is line 3's 764 / 8 streams" in err
    assert "per-stream speed is derived, never typed" in err


def test_unknown_card(tmp_path):
    p, lines = _edit(tmp_path, {"tensorfold-700-headline": {"card": "rtx9999"}})
    with pytest.raises(InputError, match=r":2: card: unknown card 'rtx9999'"):
        load_claims(p, cards=set(load_cards()))


def test_one_stream_must_be_single_user(tmp_path):
    p, lines = _edit(tmp_path, {"article-ladder-1-tpot": {"stream_relation":
                                                          "independent_requests"}})
    with pytest.raises(InputError, match=rf":{lines['article-ladder-1-tpot']}: stream_relation: "
                                         r"independent_requests with streams=1"):
        load_claims(p)


def test_the_same_run_twice_is_refused(tmp_path):
    late = {**_row("article-ladder-64-e2e"), "id": "article-batch-late-e2e",
            "run": "article-batch-late"}
    p, lines = _edit(tmp_path, {}, add=[late])
    with pytest.raises(InputError, match=rf":{lines['article-batch-late-e2e']}: run: the same "
                                         r"figure as line \d+ \(run 'article-ladder-64'\)"):
        load_claims(p)


def test_a_run_has_one_setup(tmp_path):
    p, lines = _edit(tmp_path, {"article-ladder-8-e2e": {"power_limit_w": "250"}})
    with pytest.raises(InputError, match=rf":{lines['article-ladder-8-e2e']}: power_limit_w: "
                                         r"run 'article-ladder-8' has power_limit_w=390"):
        load_claims(p)


def test_assumed_entries_are_checked(tmp_path):
    p, lines = _edit(tmp_path, {"hyperqwen-cohort-8": {"assumed": "power_limit_w=250"}})
    with pytest.raises(InputError, match=r"assumed: entry 'power_limit_w=250' is not "
                                         r"'column=value; reason'"):
        load_claims(p)
    p, lines = _edit(tmp_path, {"hyperqwen-cohort-8": {"power_limit_w": "250"}})
    with pytest.raises(InputError, match=rf":{lines['hyperqwen-cohort-8']}: power_limit_w: "
                                         r"both stated \('250'\) and assumed"):
        load_claims(p)
    p, lines = _edit(tmp_path, {"hyperqwen-cohort-8": {"assumed": "value=1; because"}})
    with pytest.raises(InputError, match=r"assumed: 'value' cannot be assumed"):
        load_claims(p)


def test_streams_running_must_be_fewer(tmp_path):
    p, lines = _edit(tmp_path, {"b200-control-32": {"streams_running": "48"}})
    with pytest.raises(InputError, match=rf":{lines['b200-control-32']}: streams_running: "
                                         r"streams_running 48 must be below streams 32"):
        load_claims(p)


def test_unquoted_comma_is_caught(tmp_path):
    p = tmp_path / "claims.csv"
    shutil.copy(RAW / "claims.csv", p)
    text = p.read_text()
    old = '"The 1,600 tok/s was a fastest second"'
    assert old in text
    i = text.index(old)
    line = text[:i].count("\n") + 1
    p.write_text(text.replace(old, old.strip('"'), 1))
    with pytest.raises(InputError, match=rf"claims.csv:{line}: .*more fields"):
        load_claims(p)


def test_bounds_are_read_from_the_bound_column(ids):
    assert ids["hyperqwen-1000-b200-post"]["bound"] == "at_least"  # "over 1,000 total tok/s"
    burst = ids["cinference-900-bursts"]  # "bursts of up to 900"
    assert (burst["bound"], burst["value"], burst["streams"]) == ("at_most", 900, 1)
    assert burst["run"] != ids["cinference-350-realistic"]["run"]
    assert ids["tensorfold-764-decode"].get("bound") == ""
    assert ids["tensorfold-764-decode"].get("no_such_column") is None


@pytest.mark.parametrize("quote,bound,value,ok", [
    ("bursts of up to 900 when coding", "at_most", 900, True),
    ("for over 1,000 total tok/s.", "at_least", 1000, True),
    ("generation was 17 tok/s or less for all the streams", "at_most", 17, True),
    ("bursts of up to 900 when coding", "at_least", 900, False),
    ("for over 1,000 total tok/s.", "at_most", 1000, False),
    ("~1,035 tok/s aggregate decode", "at_least", 1035, False),
    ("up to 900, and 350 otherwise", "at_most", 350, False),  # the word is by another number
])
def test_bound_words_sit_next_to_the_value(quote, bound, value, ok):
    assert bound_backed(bound, quote, value) is ok


def test_bound_without_words_in_the_quote_is_refused(tmp_path, capsys):
    p, lines = _edit(tmp_path, {"tensorfold-764-decode": {"bound": "at_least"}})
    assert main(["claims", "--check", "--file", str(p)]) == 2
    err = capsys.readouterr().err
    assert f"claims.csv:{lines['tensorfold-764-decode']}: bound: at_least is not backed by " \
           "the quote: no 'over', 'more than', 'at least', 'above' or the like next to 764; " \
           "leave bound empty for an exact figure" in err
    # the wrong direction: "over 1,000" does not back an upper bound
    p, lines = _edit(tmp_path, {"hyperqwen-1000-b200-post": {"bound": "at_most"}})
    assert main(["claims", "--check", "--file", str(p)]) == 2
    err = capsys.readouterr().err
    assert f":{lines['hyperqwen-1000-b200-post']}: bound: at_most is not backed by the quote: " \
           "no 'up to', 'at most', 'no more than', 'under' or the like next to 1000" in err


def test_bound_must_be_one_of_three(tmp_path):
    p, lines = _edit(tmp_path, {"cinference-900-bursts": {"bound": "approx"}})
    with pytest.raises(InputError, match=rf":{lines['cinference-900-bursts']}: bound: 'approx' "
                                         r"is not one of '', 'at_least', 'at_most'"):
        load_claims(p)


def test_a_registry_without_the_bound_column_still_loads(tmp_path):
    rows = [{k: v for k, v in r.items() if k != "bound"} for r in _rows()]
    p = _write(tmp_path, rows, tuple(c for c in COLUMNS if c != "bound"))
    got = load_claims(p)
    assert len(got) == len(rows) and {c["bound"] for c in got} == {""}


def test_rows_issue_17_found_say_what_the_seed_says(ids):
    # seed 001: the 3090 side is "W4A8 Marlin int8 + int8 KV", not W4A16
    for rid in ("hyperqwen-127-single", "hyperqwen-381-quoting", "hyperqwen-1222-all-int8",
                "hyperqwen-prefill-low", "hyperqwen-prefill-high", "hyperqwen-150k",
                "hyperqwen-150k-high"):
        assert ids[rid].stated["quantization"] == "w4a8", rid
    # 512 is qwen-warp's max_tokens cap: the short answers averaged 242 at four clients
    assert ids["article-warp-short-1-agg"]["output_tokens"] is None
    assert ids["article-warp-short-4a-agg"].assumed["output_tokens"][0] == 242
    assert ids["article-warp-long-4a-agg"].stated["output_tokens"] == 512  # "runs to 512"
    assert ids["qwenwarp-docs-4-agg"].is_assumed("output_tokens")
    assert ids["cinference-350-realistic"]["url"] == ""  # the earlier reply is not linked
    # the README's 350 W is said of its 425 at four clients only: the docs table's rows,
    # four clients included, take it from that sentence (assumed, issue 28 item 9)
    assert ids["qwenwarp-docs-1-agg"].assumed["power_limit_w"][0] == 350
    assert ids["qwenwarp-docs-4-agg"].assumed["power_limit_w"][0] == 350
    assert ids["qwenwarp-425-readme"].stated["power_limit_w"] == 350
    for rid, col in [("hyperqwen-raw-8k-8", "power_limit_w"),
                     ("hyperqwen-82-vanilla", "quantization"),
                     ("hyperqwen-82-vanilla", "spec_method"),
                     ("repro3090-gguf-prefill", "prompt_tokens"),
                     ("ninfer-dspine-solo-python", "engine_version"),
                     ("article-ladder-64-logline", "metric")]:
        assert ids[rid].is_assumed(col) and not ids[rid].stated[col], (rid, col)
    assert ids["article-ladder-64-logline"]["metric"] == "engine_log_line"


def test_listing_marks_bounds(capsys):
    assert main(["claims"]) == 0
    lines = {ln.split()[0]: ln for ln in capsys.readouterr().out.splitlines() if ln.strip()}
    assert " <=900 " in lines["cinference-900-bursts"]
    assert " >=1000 " in lines["hyperqwen-1000-b200-post"]
    exact = lines["tensorfold-764-decode"]
    assert " 764 " in exact and "=764" not in exact


def test_int8_layers_is_one_of_three_and_read_as_stated_or_assumed(tmp_path, ids):
    # seed 001: "~1,222 tok/s with every layer int8"; seed 000's article: "int8
    # activations on the MLP GEMMs"; HyperQwen's front page: assumed from its batch table
    assert ids["hyperqwen-1222-all-int8"].stated["int8_layers"] == "all"
    assert ids["article-ladder-64-tpot"].stated["int8_layers"] == "mlp"
    assert ids["hyperqwen-1035-front"].is_assumed("int8_layers")
    assert ids["hyperqwen-1035-front"]["int8_layers"] == "mlp"
    assert ids["hyperqwen-cohort-8"]["int8_layers"] == ""
    p, lines = _edit(tmp_path, {"hyperqwen-1222-all-int8": {"int8_layers": "some"}})
    with pytest.raises(InputError, match=rf":{lines['hyperqwen-1222-all-int8']}: int8_layers: "
                                         r"'some' is not one of \['', 'all', 'mlp'\]"):
        load_claims(p)


def test_bound_words_are_the_seeds_own(ids):
    from claimcheck.claims.claimtext import bound_words
    assert bound_words("at_most", "bursts of up to 900 tok/s", 900) == ("up to", "")
    assert bound_words("at_least", "for over 1,000 total tok/s", 1000) == ("over", "")
    assert bound_words("at_most", "17 tok/s or less", 17) == ("", "or less")
    assert bound_words("", "900 tok/s", 900) == ("", "")
    c = ids["cinference-900-bursts"]
    assert bound_words(c["bound"], c["quote"], c["value"]) == ("up to", "")


def test_fields_from_another_figures_sentence_are_assumed(ids):
    # issue 28 item 9: the docs table's four-client rows take card and power from the
    # README's 425 sentence; the B200 table's levels 8 to 128 read end to end as its c1 row
    for rid in ("qwenwarp-docs-4-agg", "qwenwarp-docs-4-req"):
        assert ids[rid].is_assumed("card") and ids[rid].is_assumed("power_limit_w")
        assert (ids[rid]["card"], ids[rid]["power_limit_w"]) == ("rtx3090", 350.0)
    assert not ids["qwenwarp-425-readme"].is_assumed("card")
    for n in (8, 32, 64, 128):
        assert ids[f"b200-control-{n}"].is_assumed("metric")
        assert ids[f"b200-control-{n}"]["metric"] == "e2e_aggregate"
    # seed 001: "fp8 KV" for the B200 endpoint, stated on every B200 row
    assert {ids[f"b200-control-{n}"].stated["kv_dtype"] for n in (1, 8, 32, 64, 128)} == {"fp8"}
