"""The engine release as a factor: the same steps measured on two vLLM releases on one card.

Two steps are the same when their weight format, KV and state dtypes, prefix caching, load
kind, streams, requests, prompt and output lengths are equal; they are chosen by these
properties only, never by a protocol's or an engine's name. Each side of a level is the
median over its repeats and runs (:func:`claimcheck.findings.stepframe.levels`); held-prefill
steps (no decode) are left out of the tok/s rows. The spread between one release's own runs
of a step is the yardstick a difference is read against.

Units: tok/s summed over the streams (independent requests, each its own prompt); per
stream = that sum / the streams; TTFT in s; a change is (other / base - 1).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from claimcheck.files import mdtext as md
from claimcheck.findings.stepframe import Finding, and_list, failed, fmt_name, levels
from claimcheck.findings.update_tables import ps_cell

MATCH = ["weight_format", "kv_dtype", "state_dtype", "prefix_caching", "kind", "streams",
         "requests", "input_len", "output_len"]
"""The properties that make two steps the same step (see the module doc)."""
VERSION = "vllm"
"""The step table's column holding the vLLM release a step ran on."""


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v))


def main_version(f: pd.DataFrame) -> str | None:
    """The vLLM release with the most steps in ``f`` (the step frame; the lower release on a
    tie), or None when ``f`` names none: the release the body's other findings read."""
    if VERSION not in f or f[VERSION].dropna().empty:
        return None
    n = f[VERSION].dropna().astype(str).value_counts()
    return min(n[n == n.max()].index, key=_key)


def of_version(f: pd.DataFrame, version: str | None) -> pd.DataFrame:
    """The steps of ``f`` run on ``version`` (all of ``f`` when it is None)."""
    return f if version is None else f[f[VERSION].astype(str) == version]


def release_of(engine_version: Any) -> str | None:
    """The vLLM release a registry ``engine_version`` names ("vLLM 0.33.0" -> "0.33.0"),
    None for another engine or none stated."""
    m = re.fullmatch(r"\s*vLLM\s+v?(\d+\.\d+\.\d+)\s*", str(engine_version or ""))
    return m.group(1) if m else None


def commit_words(v: Any) -> str:
    """A recorded vLLM commit as words: git describe's ``g`` before the hash dropped."""
    v = str(v)
    return v[1:] if re.fullmatch(r"g[0-9a-f]{7,40}", v) else v


def _spread(s: pd.Series) -> float | None:
    """max / min - 1 of one side's steps at a level; None with fewer than two."""
    s = s.dropna()
    return float(s.max() / s.min() - 1) if len(s) >= 2 and s.min() > 0 else None


def version_levels(f: pd.DataFrame, base: str, other: str) -> pd.DataFrame:
    """One row per level measured on both releases (held-prefill steps left out): each
    side's end to end, all-streams-decoding and median TTFT (s), the changes, the spread
    between the base release's own steps of the level, and each side's runs."""
    f = f[~f["held_prefill"]]
    sides = {}
    for tag, v in (("base", base), ("other", other)):
        g = of_version(f, v)
        lv = levels(g, MATCH).set_index(MATCH)
        lv["spread"] = g.groupby(MATCH, dropna=False)["e2e_aggregate_tok_s"].apply(_spread)
        sides[tag] = lv[["e2e_aggregate_tok_s", "decode", "median_ttft_ms", "n", "runs",
                         "spread"]]
    both = sides["base"].merge(sides["other"], how="inner", left_index=True,
                               right_index=True, suffixes=("_base", "_other")).reset_index()
    both["e2e_change"] = both["e2e_aggregate_tok_s_other"] / both["e2e_aggregate_tok_s_base"] - 1
    both["decode_change"] = both["decode_other"] / both["decode_base"] - 1
    both["ttft_change"] = both["median_ttft_ms_other"] / both["median_ttft_ms_base"] - 1
    return both.sort_values(["weight_format", "input_len", "streams"]).reset_index(drop=True)


def _pct(x: float) -> str:
    return f"{x:+.1%}".replace("-", "−")


def _range(xs: Iterable[float]) -> str:
    xs = [x for x in xs if pd.notna(x)]
    lo, hi = _pct(min(xs)), _pct(max(xs))
    return lo if lo == hi else f"{lo} to {hi}"


def _streams(lo: int, hi: int) -> str:
    """'8 streams' or '1 to 64 streams'."""
    return f"{lo:,} streams" if lo == hi else f"{lo:,} to {hi:,} streams"


def _format_clause(lv: pd.DataFrame, base: str, other: str) -> tuple[str, dict[str, Any]]:
    """One weight format's levels in words: the end-to-end and all-streams-decoding changes
    from ``base`` to ``other`` (range, median, how many faster), and its numbers."""
    faster = int((lv["e2e_change"] > 0).sum())
    nums: dict[str, Any] = {"levels": len(lv), "e2e_min": lv["e2e_change"].min(),
                            "e2e_max": lv["e2e_change"].max(),
                            "e2e_median": lv["e2e_change"].median(), "faster": faster}
    s = (f"({_streams(int(lv['streams'].min()), int(lv['streams'].max()))}) change by "
         f"{_range(lv['e2e_change'])} end to end from {base} to {other} (median "
         f"{_pct(nums['e2e_median'])}; {other} faster at {faster} of {len(lv)})")
    dec = lv[lv["decode_change"].notna()]
    if not dec.empty:
        nums.update(decode_min=dec["decode_change"].min(), decode_max=dec["decode_change"].max())
        s += f" and by {_range(dec['decode_change'])} while all streams decode"
    return s, nums


def _ttft_clause(lv: pd.DataFrame, base: str, other: str) -> tuple[str, dict[str, Any]]:
    """The median TTFT's change at long prompts (>= 4,096 tokens) and several streams, in
    words, and its numbers; empty where no such level was measured on both."""
    long = lv[(lv["input_len"] >= 4096) & (lv["streams"] > 1) & lv["ttft_change"].notna()]
    if long.empty:
        return "", {}
    at = long.iloc[0]
    return (f"{_range(long['ttft_change'])} "
            f"({at['median_ttft_ms_base'] / 1000:.2f} s on {base}, "
            f"{at['median_ttft_ms_other'] / 1000:.2f} s on {other} at {int(at['streams'])} "
            "streams)"), {"ttft_min": long["ttft_change"].min(),
                          "ttft_max": long["ttft_change"].max(),
                          "ttft_input_len": int(at["input_len"]),
                          "ttft_streams_min": int(long["streams"].min()),
                          "ttft_streams_max": int(long["streams"].max())}


def engine_version(f: pd.DataFrame, base: str | None) -> Finding:
    """What the release changes: ``f`` is the step frame of every release on one card,
    ``base`` the release the body reads (:func:`main_version`); the other release is the
    one with the most levels in common with it. Each weight format is read apart (its own
    range, median and TTFT change); the base release's own spread is one yardstick for all."""
    cond = "a step measured on two vLLM releases with every other property equal"
    others = sorted({str(v) for v in f[VERSION].dropna()} - {base}, key=_key) if base else []
    if not others:
        return failed("engine version", cond, "the runs are of one vLLM release")
    pairs = {v: version_levels(f, base, v) for v in others}
    other = max(others, key=lambda v: (len(pairs[v]), _key(v)))
    lv = pairs[other]
    if lv.empty:
        return failed("engine version", cond, f"no step of vLLM {other} matches one of {base}")
    fmts = sorted(set(lv["weight_format"]))
    nums = {**_format_clause(lv, base, other)[1], **_ttft_clause(lv, base, other)[1]}
    clauses, ttfts = [], []
    for fmt in fmts:
        g = lv[lv["weight_format"] == fmt]
        words, n = _format_clause(g, base, other)
        nums.update({f"{fmt}_{k}": v for k, v in n.items()})
        clauses.append(words if len(fmts) == 1 else
                       f"with {fmt_name(fmt)} weights, {len(g)} of them {words}")
        t_words, t = _ttft_clause(g, base, other)
        nums.update({f"{fmt}_{k}": v for k, v in t.items()})
        if t_words:
            ttfts.append((fmt, t_words, t))
    if len(fmts) == 1:
        s = (f"On the same card and {fmt_name(fmts[0])} weights, {len(lv)} steps measured on "
             f"both vLLM {base} and {other} {clauses[0]}")
    else:
        s = (f"On the same card, {len(lv)} steps were measured on both vLLM {base} and {other} "
             f"with every other property equal: {'; '.join(clauses)}")
    spread = lv["spread_base"].dropna()
    if not spread.empty:
        top = float(spread.max())
        past = int((lv["e2e_change"].abs() > top).sum())
        nums.update(base_spread_max=top, past_spread=past)
        s += (f"; {base}'s own repeated runs" if len(fmts) == 1 else
              f". Repeated runs on {base}") + (
            f" of one step differ by up to {top:.1%} end to end, and {past} of the {len(lv)} "
            "changes are larger than that")
    if ttfts:
        t0 = ttfts[0][2]
        lo = min(t["ttft_streams_min"] for _, _, t in ttfts)
        hi = max(t["ttft_streams_max"] for _, _, t in ttfts)
        parts = [w if len(fmts) == 1 else f"{w} with {fmt_name(fmt)} weights"
                 for fmt, w, _ in ttfts]
        s += (f". With {t0['ttft_input_len']:,}-token prompts at {_streams(lo, hi)}, the "
              f"median time to first token moves by {' and by '.join(parts)}")
    names = {n for side in ("runs_base", "runs_other") for r in lv[side]
             for n in str(r).split(", ")}
    labels = sorted(set(f.loc[f["run"].isin(names), "weights_label"].dropna().astype(str)))
    return Finding("engine version", s + ".", nums, cond, True,
                   rows=[{**r, "base": base, "other": other, "weights_labels": labels}
                         for r in lv.to_dict("records")])


def version_table(x: Finding) -> str:
    """The finding's levels: each side's end to end summed (per stream) and the changes."""
    base, other = x.rows[0]["base"], x.rows[0]["other"]
    head = ["Weights", "Streams (requests)", "Prompt + output, tokens",
            f"End to end on {base}, tok/s summed (per stream)",
            f"End to end on {other}", "Change, end to end (all streams decoding)"]
    rows = [[fmt_name(r["weight_format"]), f"{int(r['streams']):,} ({int(r['requests']):,})",
             f"{int(r['input_len']):,} + {int(r['output_len']):,}",
             ps_cell(r["e2e_aggregate_tok_s_base"], r["streams"]),
             ps_cell(r["e2e_aggregate_tok_s_other"], r["streams"]),
             f"{_pct(r['e2e_change'])} ("
             + (_pct(r["decode_change"]) if pd.notna(r["decode_change"]) else "—") + ")"]
            for r in x.rows]
    fmts = and_list([fmt_name(f) for f in sorted({r["weight_format"] for r in x.rows})])
    runs = sorted({n for r in x.rows for side in ("runs_base", "runs_other")
                   for n in str(r[side]).split(", ") if n})
    return (md.table(head, rows, "lrrrrr") + "\n\n"
            f"*The same steps on two vLLM releases, {fmts} weights, one card. End to end = all "
            "output tokens / first send to last token (prefill, ramp and tail in); per stream "
            "= the sum / the streams, each stream its own request. One row per level: the "
            f"median over that release's repeats and runs of the level. Change = {other} "
            f"over {base}, minus one. Runs: {', '.join(runs)} "
            f"({' and '.join(x.rows[0]['weights_labels'])}).*")


def _row_shapes(x: Finding) -> set[tuple[int, int, int]]:
    """(streams, prompt tokens, output tokens) of each row of the finding."""
    return {(int(r["streams"]), int(r["input_len"]), int(r["output_len"])) for r in x.rows}


def model_words(model_rows: list[dict[str, Any]], runs: set[str], release: str) -> str:
    """How the step model, calibrated on ``release``'s own runs (``runs``), fares on their
    steps it was not calibrated on (:func:`claimcheck.verdicts.verdicts_md.model_summary`)."""
    from claimcheck.verdicts.verdicts_md import model_summary
    rows = [r for r in model_rows if r.get("run") in runs]
    if not rows:
        return ""
    m = model_summary(rows)
    return (f"Calibrated on the {release} runs alone (bandwidth, compute and per-request "
            f"overhead from their own one-stream steps), the step model lands within 5% on "
            f"both end to end and decode on {m['both']} of their {m['steps']} other steps.")


def _card_words(card: str, watts: Any) -> str:
    from claimcheck.files.errors import InputError
    from claimcheck.physics.cardfiles import get_card
    try:
        name = get_card(card).name
    except InputError:
        name = card
    w = pd.to_numeric(watts, errors="coerce")
    return name + ("" if pd.isna(w) else f" at {float(w):.0f} W")


@dataclass(frozen=True)
class Published:
    """The registry's figures made with one vLLM release."""

    release: str
    rows: list[dict[str, Any]]

    @property
    def cards(self) -> list[str]:
        """Each card (with its power limit where the registry states one) in words."""
        return sorted({_card_words(str(r["card"]), r.get("power_limit_w")) for r in self.rows})


def published_with(claims: list[dict[str, Any]], release: str) -> Published:
    """The registry rows whose ``engine_version`` names vLLM ``release``."""
    return Published(release, [c for c in claims if release_of(c.get("engine_version"))
                               == release])


def published_words(x: Finding, pub: Published, build: str = "") -> str:
    """The published figures made with the release the finding sets against the base,
    named beside its rows, and what the rows do not say about them; ``build``: the
    release's build as the runs recorded it (its wheel's commit)."""
    if not pub.rows:
        return (f"No published figure in the registry was made with vLLM {pub.release}.")
    shapes = _row_shapes(x)
    at = [c for c in pub.rows if (c.get("streams"), c.get("prompt_tokens"),
                                  c.get("output_tokens")) in shapes]
    return (f"The seeds made {len(pub.rows)} of their published figures with vLLM "
            f"{pub.release}, all on {and_list(pub.cards)}; {len(at)} of them are at a "
            "shape (streams, prompt and output tokens) of a row above. They are judged "
            "against their own card below; these rows measure only what the release moves "
            f"on this card, with dummy weights and the release as its wheel was built"
            + (f" ({build})" if build else "") + ", not as a seed's build may have patched it.")


def published_table(x: Finding, pub: Published) -> str:
    """The appendix's list of the figures made with the finding's other release: each with
    its card, shape and value by its own definition, and whether the release table has a
    row at its shape (another card's figure: named beside the rows, never reproduced by
    them)."""
    shapes = _row_shapes(x)
    rows = []
    for c in sorted(pub.rows, key=lambda c: (str(c["card"]), int(c.get("streams") or 0),
                                            str(c["id"]))):
        shape = (c.get("streams"), c.get("prompt_tokens"), c.get("output_tokens"))
        rows.append([f"`{c['id']}`", _card_words(str(c["card"]), c.get("power_limit_w")),
                     md.num(c.get("streams"), "{:,.0f}"),
                     ("not stated" if None in shape[1:] else
                      f"{int(shape[1]):,} + {int(shape[2]):,}"),
                     f"{float(c['value']):,.1f} ({c.get('metric_label') or c['metric']})",
                     "yes" if shape in shapes else "no"])
    other = x.rows[0]["other"]
    return (md.table(["Figure", "Card", "Streams", "Prompt + output, tokens",
                      "Published, tok/s summed (its definition)",
                      "A row of the release table at its shape"], rows, "llrrrl") + "\n\n"
            f"*Every registry figure made with vLLM {other}, each on its own card. The release "
            "table's rows are this card's steps on both releases (dummy weights); a figure at "
            "a row's shape is named beside it, never reproduced by it.*")
