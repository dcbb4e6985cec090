"""The claims registry: shipped rows validate, broken copies fail naming line and field."""

import shutil

import pytest

from claimcheck.core.cards import load_cards
from claimcheck.core.claims import claims_by_id, load_claims
from claimcheck.core.errors import InputError
from claimcheck.core.paths import RAW


@pytest.fixture(scope="module")
def claims():
    return load_claims(cards=set(load_cards()))


def test_shipped_registry_is_valid(claims):
    assert len(claims) > 100
    ids = claims_by_id(claims)
    for key in ("tensorfold-764-decode", "cinference-1623-fastest-second",
                "hyperqwen-1035-front", "hyperqwen-1094-readme-steady",
                "ninfer-dspine-2439-windows", "b200-control-64", "repro3090-chat-greedy"):
        assert key in ids


def test_per_stream_is_derived(claims):
    ids = claims_by_id(claims)
    assert ids["tensorfold-764-decode"].per_stream_tok_s == 764 / 8  # 95.5
    assert round(ids["hyperqwen-1046-demo"].per_stream_tok_s, 1) == 16.3
    assert round(ids["ninfer-dspine-2439-windows"].per_stream_tok_s, 1) == 76.2
    warp = ids["qwenwarp-docs-4-req"]  # a per-request figure: aggregate is derived
    assert warp.per_stream_tok_s == 114.8
    assert warp.aggregate_tok_s == pytest.approx(459.2)


def _broken(tmp_path, old, new):
    p = tmp_path / "claims.csv"
    shutil.copy(RAW / "claims.csv", p)
    text = p.read_text()
    assert old in text
    p.write_text(text.replace(old, new, 1))
    return p


def test_bad_metric_names_line_and_field(tmp_path):
    p = _broken(tmp_path, "DFlash2,,decode_aggregate,764,", "DFlash2,,decode_agg,764,")
    with pytest.raises(InputError, match=r"claims.csv:3: metric: 'decode_agg' is not one of"):
        load_claims(p)


def test_bad_value(tmp_path):
    p = _broken(tmp_path, "decode_aggregate,764,", "decode_aggregate,seven,")
    with pytest.raises(InputError, match=r":3: value: not a number"):
        load_claims(p)


def test_typed_per_stream_column_is_refused(tmp_path):
    p = _broken(tmp_path, ",note\n", ",note,per_stream_tok_s\n")
    with pytest.raises(InputError, match=r":1: per_stream_tok_s: per-stream speed is derived"):
        load_claims(p)


def test_unknown_card(tmp_path):
    p = _broken(tmp_path, ",rtx5090,", ",rtx9999,")
    with pytest.raises(InputError, match=r":2: card: unknown card 'rtx9999'"):
        load_claims(p, cards=set(load_cards()))


def test_single_user_with_many_streams(tmp_path):
    p = _broken(tmp_path, ",1,single_user,", ",4,single_user,")
    with pytest.raises(InputError, match=r"streams: single_user with streams=4"):
        load_claims(p)


def test_unquoted_comma_is_caught(tmp_path):
    p = _broken(tmp_path, '"The 1,600 tok/s was a fastest second"',
                "The 1,600 tok/s was a fastest second")
    with pytest.raises(InputError, match=r"claims.csv:6: .*more fields"):
        load_claims(p)
