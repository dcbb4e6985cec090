"""The Update's one sentence on the carried model's test on the article's RTX 3090 ladder
(issue 42 item 5): named values from data/derived/carried_3090.csv
(:mod:`claimcheck.predict.carry_table`) and the ladder claims' verdict rows (what was
assumed). Pure: rows in, values out; templates/body.md names them (``carry.*``).

The ladder figures are the registry's ``article-ladder-<streams>-tpot`` and ``-e2e`` rows
(median TPOT and end to end at each stream count: issue 42's done-when), the log lines
left out. A figure lands when its prediction is within :data:`LADDER_TOLERANCE` of the
published figure (as printed, one decimal).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from claimcheck.predict.carry_int8 import INT8_WORDS
from claimcheck.update.template import Value, flag, num, word
from claimcheck.verdicts.sourcemodel import within

LADDER = re.compile(r"^article-ladder-(\d+)-(tpot|e2e)$")
LADDER_TOLERANCE = 0.10
"""Issue 42's done-when: every ladder figure within 10% of the article's."""
SOURCE = "carried_3090.csv"


def ladder_rows(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The ladder's median-TPOT and end-to-end rows of carried_3090.csv."""
    return [r for r in rows if LADDER.match(str(r["claim_id"]))]


def ladder_values(rows: Sequence[Mapping[str, Any]],
                  verdicts: Sequence[Mapping[str, Any]] = ()) -> list[Value]:
    """``carry.*``: how many ladder figures land within the tolerance, the median error,
    the stream counts where it misses and by how much (signed, lowest and highest), whether
    every miss is under (``short_lo``/``short_hi``: how far under, unsigned), the card and
    power limit, and what the prediction assumed (from the ladder verdicts'
    ``carried_assumptions``: the part naming what stands in for the format)."""
    lad = ladder_rows(rows)
    if not lad:
        return [flag("carry.has", False, SOURCE)] + [
            word(f"carry.{k}", "none", SOURCE) for k in
            ("card", "power", "n", "within", "tol", "median", "miss_streams", "miss_lo",
             "miss_hi", "short_lo", "short_hi", "assumed", "int8", "short", "under_span")] + [
                flag("carry.under", False, SOURCE), flag("carry.misses", False, SOURCE),
                flag("carry.all_under", False, SOURCE),
                flag("carry.int8.has", False, SOURCE)]
    ratio = {r["claim_id"]: float(r["predicted_over_published"]) for r in lad}
    miss = {k: x for k, x in ratio.items() if not within(x, LADDER_TOLERANCE)}
    streams = sorted({int(LADDER.match(k).group(1)) for k in miss})  # type: ignore[union-attr]
    errs = sorted(x - 1 for x in miss.values())
    ids = {r["claim_id"] for r in lad}
    said = [str(v.get("carried_assumptions") or "") for v in verdicts if v.get("id") in ids]
    parts = [p for s in said[:1] for p in s.split("; ") if "assumed from" in p
             or "measured for" in p]
    int8 = [p.removeprefix(INT8_WORDS) for s in said[:1] for p in s.split("; ")
            if p.startswith(INT8_WORDS)]
    power = {float(r["power_limit_w"]) for r in lad}
    return [flag("carry.has", True, SOURCE),
            word("carry.card", "RTX 3090", SOURCE + " (the card it predicts)"),
            num("carry.power", min(power), "W", SOURCE + " power_limit_w", "{:,.0f}"),
            num("carry.n", len(lad), "figures", SOURCE, "{:,}"),
            num("carry.within", len(lad) - len(miss), "figures", SOURCE, "{:,}"),
            num("carry.tol", LADDER_TOLERANCE, "fraction", "carry_words LADDER_TOLERANCE",
                "{:.0%}"),
            num("carry.median", statistics.median(abs(x - 1) for x in ratio.values()),
                "fraction", SOURCE, "{:.1%}"),
            flag("carry.misses", bool(miss), SOURCE),
            flag("carry.under", bool(miss) and all(e < 0 for e in errs), SOURCE),
            word("carry.miss_streams", " and ".join(str(s) for s in streams) or "none",
                 SOURCE),
            num("carry.miss_lo", errs[0] if errs else None, "fraction", SOURCE, "{:+.1%}"),
            num("carry.miss_hi", errs[-1] if errs else None, "fraction", SOURCE, "{:+.1%}"),
            num("carry.short_lo", -errs[-1] if errs else None, "fraction", SOURCE, "{:.1%}"),
            num("carry.short_hi", -errs[0] if errs else None, "fraction", SOURCE, "{:.1%}"),
            word("carry.short", _span(-errs[-1], -errs[0]) if errs else "none", SOURCE),
            flag("carry.all_under", all(x < 1 for x in ratio.values()), SOURCE),
            word("carry.under_span", _span(min(1 - x for x in ratio.values()),
                                           max(1 - x for x in ratio.values())), SOURCE),
            word("carry.assumed",
                 parts[0] if parts else "eta and compute measured for the format here",
                 "verdicts.json carried_assumptions"),
            flag("carry.int8.has", bool(int8), "verdicts.json carried_assumptions"),
            word("carry.int8", int8[0] if int8 else "none",
                 "verdicts.json carried_assumptions")]


def _span(lo: float, hi: float) -> str:
    """Two unsigned fractions as the text says them: one value when they print alike,
    else "lo to hi"."""
    a, b = f"{lo:.1%}", f"{hi:.1%}"
    return a if a == b else f"{a} to {b}"


def carried_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The appendix's table of the RTX 3090's published figures (carried_3090.csv) against
    the carried model's prediction, every term from the local card's runs: the ladder
    first, then the batch runs, long prompts and log lines in the file's order."""
    from claimcheck.files import mdtext
    lad = ladder_rows(rows)
    rest = [r for r in rows if r not in lad]
    body = [[str(r["claim_id"]), str(r["metric"]), f"{float(r['power_limit_w']):g}",
             str(r["streams"]), f"{int(r['input_len']):,} + {int(r['output_len']):,}",
             f"{float(r['published_tok_s']):,.1f}", f"{float(r['predicted_tok_s']):,.1f}",
             f"{float(r['predicted_over_published']) - 1:+.1%}", str(r.get("note") or "")]
            for r in [*lad, *rest]]
    return "\n".join([
        "## The RTX 3090's published figures against the carried model", "",
        "Predicted from this card's runs alone, every term carried by the RTX 3090's "
        "datasheet (`claimcheck predict --card rtx3090 --power-limit W --engine "
        "w4a16-hyperqwen`); no number measured on an RTX 3090 feeds a term. From "
        "`data/derived/carried_3090.csv`.", "",
        mdtext.table(["Claim", "Metric", "W", "Streams", "Tokens in + out", "Published tok/s",
                      "Predicted tok/s", "Predicted / published - 1", "Note"], body), ""])
