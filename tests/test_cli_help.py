"""Issue 18 item 6: help text for every command and option, in plain text (no reST), and
the README names the commands that take no --json."""

import re

from claimcheck import cli as cli_mod

from ._cli import ROOT, cli

REST = re.compile(r"``|:func:|:class:|:mod:|:data:|\*\*")


def _commands():
    sub = next(a for a in cli_mod.parser()._actions if a.dest == "cmd")
    return sub.choices


def test_every_command_and_option_has_plain_help():
    top = cli("--help")
    assert top.returncode == 0 and not REST.search(top.stdout), top.stdout
    for name, p in _commands().items():
        assert p.description, f"{name}: no description"
        for a in p._actions:
            if a.dest != "help":
                assert a.help, f"{name} {a.option_strings or a.dest}: no help text"
        text = p.format_help()
        assert not REST.search(text), f"{name} --help shows reST markup:\n{text}"


def test_json_or_said_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    said = readme[readme.index("Every command that prints results takes `--json`"):][:400]
    for name, p in _commands().items():
        if not any("--json" in a.option_strings for a in p._actions):
            assert f"`{name}`" in said, f"{name} takes no --json and the README does not say"


DECIMAL = re.compile(r"\b(GB|MB|kB)\b")
BINARY = re.compile(r"\b(GiB|MiB|KiB)\b")


def test_model_prints_one_unit_family_per_line():
    # the ladder run's engine logged 50.22 GiB = 53.92 GB; less the 2.54 GB BF16 input
    # embedding (248,320 x 5,120 x 2 B = 2.54 GB) = 51.38 GB read per step
    r = cli("model", ROOT / "data/raw/runs/h200-20261129-bf16-dummy-ladder")
    assert r.returncode == 0, r.stderr
    for line in r.stdout.splitlines():
        assert not (DECIMAL.search(line) and BINARY.search(line)), line
    assert ("engine: W engine log: weights 53.92 GB (the log's figure, converted) less input "
            "embedding 2.54 GB (bf16) = 51.38 GB read per step") in r.stdout
