"""Names that are names (issue 39, item 2): a card, engine or protocol name names folders (a
run's directory is ``card-day-engine-protocol``), so it is lower case letters, digits, '-'
and '.', starting with a letter or a digit; checked where it enters (a cards file's ``card``
column, the keys of an engines or protocols file, the ``--card``/``--engine``/``--protocol``
options), each refusal one line naming the file and line or the option."""

import json

import pytest

from claimcheck.config.configfiles import load_engines, load_protocols
from claimcheck.files.errors import InputError
from claimcheck.files.names import NAME_PATTERN, NAME_RULE, name_refusal
from claimcheck.files.paths import CONFIG, RAW
from claimcheck.files.readers import read_schema
from claimcheck.physics.cardfiles import load_cards
from tests._cli import QWEN, cli, one_line_error

RULE = "a name is lower case letters, digits, '-' and '.', starting with a letter or a digit"


def user_cards(tmp_path, name):
    """A user cards file of one card: the registry's H200 row under ``name``."""
    text = (RAW / "cards.csv").read_text().splitlines()
    h200 = next(line for line in text if line.startswith("h200,"))
    p = tmp_path / "mine.csv"
    cell = f'"{name}"' if "," in name else name
    p.write_text(text[0] + "\n" + h200.replace("h200,", f"{cell},", 1)
                 .replace(",NVIDIA H200,", ",NVIDIA H200 (mine),") + "\n")
    return p


def roofline(cards_file, card="h200"):
    return cli("roofline", "--cards-file", cards_file, "--card", card, "--config", QWEN,
               "--weights-format", "bf16")


# --- a user card named as a path --------------------------------------------------------------

@pytest.mark.parametrize(("name", "why"), [
    ("../../escape", "holds a path separator"),
    ("/tmp/escape", "holds a path separator"),
    (".hidden", "starts with '.'"),
    ("my card", "holds a space"),
    ("l40s!", "holds '!'"),
])
def test_a_user_card_that_is_not_a_name_is_refused_naming_its_line(tmp_path, name, why):
    p = user_cards(tmp_path, name)
    assert one_line_error(roofline(p)) == (
        f"claimcheck: error: {p}:2: card: card name {name!r} {why}; {RULE}")


def test_measure_with_an_escaping_card_name_writes_nothing_anywhere(tmp_path):
    """The issue's case: ``../../escape`` would have put its run two folders above
    --runs-dir; the option is refused before the cards are even read."""
    runs = tmp_path / "a" / "b" / "runs"
    p = user_cards(tmp_path, "../../escape")
    r = cli("measure", "--cards-file", p, "--card", "../../escape", "--engine", "bf16-dummy",
            "--protocol", "decode-rows", "--state", tmp_path / "state", "--runs-dir", runs)
    assert one_line_error(r) == ("claimcheck: error: --card: card name '../../escape' holds a "
                                 f"path separator; {RULE}")
    assert sorted(x.name for x in tmp_path.iterdir()) == ["mine.csv"]


@pytest.mark.parametrize(("name", "near"), [("H200", "h200"), ("h200 ", "h200"),
                                            (" h200", "h200"), ("H 200", "h200")])
def test_a_user_card_differing_from_the_registry_only_by_case_or_spaces(tmp_path, name,
                                                                          near):
    p = user_cards(tmp_path, name)
    with pytest.raises(InputError) as e:
        load_cards(RAW / "cards.csv", p)
    assert str(e.value) == (
        f"{p}:2: card: card name {name!r} differs from the registry's {near!r} only by case "
        "or spaces: a user cards file adds cards, it never changes the registry's; give "
        f"yours another name ({NAME_RULE})")


def test_a_capital_not_near_a_registry_card_is_refused_as_a_capital(tmp_path):
    p = user_cards(tmp_path, "L40S")
    assert one_line_error(roofline(p)) == (
        f"claimcheck: error: {p}:2: card: card name 'L40S' holds a capital letter; {RULE}")


def test_a_good_user_card_name_with_a_dot_is_kept(tmp_path):
    p = user_cards(tmp_path, "h200.mine-2")
    assert load_cards(RAW / "cards.csv", p)["h200.mine-2"].memory_gib == load_cards()[
        "h200"].memory_gib


# --- the options ------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "option", "what", "value", "why"), [
    (["roofline", "--config", QWEN, "--weights-format", "bf16", "--card"], "--card", "card",
     "H200", "holds a capital letter"),
    (["roofline", "--config", QWEN, "--weights-format", "bf16", "--card"], "--card", "card",
     "h200 ", "has space around it"),
    (["predict", "--card", "h200", "--protocol", "decode-rows", "--engine"], "--engine",
     "engine", "../bf16-dummy", "holds a path separator"),
    (["predict", "--card", "h200", "--engine", "bf16-dummy", "--protocol"], "--protocol",
     "protocol", "Decode-Rows", "holds a capital letter"),
    (["serve", "--engine"], "--engine", "engine", "/abs/engine", "holds a path separator"),
    (["measure", "--card", "h200", "--engine", "bf16-dummy", "--protocol"], "--protocol",
     "protocol", "", "is empty"),
])
def test_each_name_option_refuses_what_is_not_a_name(tmp_path, args, option, what, value,
                                                     why):
    r = cli(*args, value)
    assert one_line_error(r) == (f"claimcheck: error: {option}: {what} name {value!r} {why}; "
                                 f"{RULE}")
    assert list(tmp_path.iterdir()) == []


# --- the keys of engines and protocols files --------------------------------------------------

def test_an_engine_key_that_is_not_a_name_is_refused_on_its_line(tmp_path):
    p = tmp_path / "engines.yaml"
    p.write_text("engines:\n  ok:\n    description: d\n    model: m\n    weights: dummy\n"
                 "    served_model_name: s\n  ../../escape:\n    description: d\n    model: m\n"
                 "    weights: dummy\n    served_model_name: s\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_engines(p)
    assert str(e.value) == (f"{p}:7: engines.../../escape: engine name '../../escape' holds "
                            f"a path separator; {RULE}")


def test_a_protocol_key_that_is_not_a_name_is_refused_on_its_line(tmp_path):
    text = (CONFIG / "protocols.yaml").read_text(encoding="utf-8")
    assert "\n  decode-rows:\n" in text
    p = tmp_path / "protocols.yaml"
    p.write_text(text.replace("\n  decode-rows:\n", "\n  Decode-Rows:\n"), encoding="utf-8")
    line = text[:text.index("\n  decode-rows:\n")].count("\n") + 2
    with pytest.raises(InputError) as e:
        load_protocols(p)
    assert str(e.value) == (f"{p}:{line}: protocols.Decode-Rows: protocol name 'Decode-Rows' "
                            f"holds a capital letter; {RULE}")


def test_the_schemas_carry_the_one_name_pattern():
    for schema, key in (("engines", "engines"), ("protocols", "protocols")):
        got = read_schema(schema)["properties"][key]["propertyNames"]["pattern"]
        assert got == NAME_PATTERN, schema
    assert NAME_PATTERN == r"^[a-z0-9][a-z0-9.-]*$"


def test_every_committed_name_is_a_name():
    names = [*load_cards(), *load_engines(), *load_protocols(CONFIG / "protocols.yaml")]
    assert names and [n for n in names if name_refusal(n)] == []
    assert json.dumps(names)  # plain strings
