"""Issue 40 item 7: a render prints one line a job. Snakemake prints a rule's input and
output lists unless the rule has a ``message:``; every rule of workflow/rules has one but
the GPU rules, whose whole job block (command, resources) ``snakemake -n -p measure`` shows
on purpose, so that a user reads what a cluster will run before it runs
(tests/test_cluster_matrix.py)."""

import re

from claimcheck.files.paths import ROOT


def rules_without_message(text: str) -> list[str]:
    """The rules of one .smk text whose body has no ``message:`` directive."""
    blocks = re.split(r"^(?=rule \w+:)", text, flags=re.M)
    return [re.match(r"rule (\w+):", b)[1] for b in blocks
            if b.startswith("rule ") and not re.search(r"^    message:", b, re.M)]


def test_the_check_finds_a_rule_without_a_message():
    text = ("rule a:\n    message:\n        \"a\"\n    shell: \"true\"\n\n"
            "rule b:\n    input: \"x\"\n    shell: \"true\"\n")
    assert rules_without_message(text) == ["b"]


SHOWN_WHOLE = {"measure.smk": ["measure", "measure_job"]}


def test_every_rule_says_one_line():
    missing = {p.name: rules_without_message(p.read_text())
               for p in sorted((ROOT / "workflow" / "rules").glob("*.smk"))}
    assert {k: v for k, v in missing.items() if v} == SHOWN_WHOLE
