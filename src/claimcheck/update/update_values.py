"""The Update body's named values (:mod:`claimcheck.update.template`): each claim of the
families in ``config/update_claims.yaml`` read from the registry (its row and its verdict:
the seed's five asks, the verdict, the local prediction) and each finding of this card's
runs (:mod:`claimcheck.findings.findings`), one named number each. Pure: tables in, values
out; the body's template names them.

Units: tok/s, ms, MHz, W, tokens, output tokens per joule; η and changes as fractions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from claimcheck.claims.metrics import METRICS
from claimcheck.files.frames import number
from claimcheck.findings.stepframe import (
    Finding,
    decode_levels,
    levels,
    main_context,
)
from claimcheck.update.format_values import alt_values, low_values, share_values
from claimcheck.update.template import Value, flag, num, word
from claimcheck.verdicts.verdicts import ABOVE_CARRIED, MATCHES_CARRIED, SHORT_CARRIED

PCT = "{:.0%}"
X2 = "{:.2f}"
DRAFTER = "needs a drafter"
REPRODUCED = "reproduced by a seed's run"
UNDER = 0.015
"""Long prompts' share this far (or further) under short prompts' at every level reads as
'under' it, not 'at' it (FP8's 2-4 points; BF16's within a point or two either way)."""
AT_CAP = 0.995
"""A step whose highest 1-Hz draw reaches this share of the enforced limit ran at the cap."""
PREDICTION_REASON = ("this card's model carries no term for the claim's own card and no "
                     "drafting rows yet")
"""Why a claim has no local prediction when its verdict row has no carried columns (a
verdicts table made without data/derived/carried_claims.csv): a reason, never a number."""
CARRIED_KINDS = (MATCHES_CARRIED, ABOVE_CARRIED, SHORT_CARRIED)
"""The verdict kinds read against the carried model (verdicts.verdict_carried)."""


def prediction_of(v: Mapping[str, Any]) -> dict[str, Any] | None:
    """The carried model's prediction for a verdict row, for the claim's section:
    ``tok_s`` (summed over the streams sharing it), ``words`` (what was carried and
    assumed) and ``reason`` (why there is none); None when the row has no carried columns."""
    if "carried_model_tok_s" not in v:
        return None
    return {"tok_s": number(v.get("carried_model_tok_s")),
            "words": str(v.get("carried_assumptions") or ""),
            "reason": str(v.get("carried_reason") or "")}


def tok(v: float | None) -> str:
    """A published figure as its source printed it: 2,439.6 keeps its decimal, 764 has none."""
    if v is None:
        return ""
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:,.1f}"


LABEL_WORDS = {"missing": "not given", "given by the publication": "given by the source",
               "supplied by the registry": "supplied by the registry, not the source",
               "not applicable": "not applicable"}
"""A verdict's label state (claims/labels) as the claim's sentence says it."""


def label_words(state: Any) -> str:
    """A label's state in words; an empty or unknown state reads as not given."""
    return LABEL_WORDS.get(str(state or "missing"), str(state))


def _relation(c: Mapping[str, Any]) -> str:
    rel = str(c.get("stream_relation") or "streams").replace("_", " ")
    return rel if int(c["streams"]) != 1 else "stream"


def tau_rows_words(v: Mapping[str, Any]) -> str:
    """The verify rows a verdict's tokens-kept-needed was counted at, in words: "at 16 verify
    rows per stream (verify rows assumed by the registry)"; one row: "at one verify row per
    stream (the plain roofline's ratio)"."""
    rows = number(v.get("verify_rows_per_stream"))
    if not rows or rows <= 1:
        return "at one verify row per stream (the plain roofline's ratio)"
    why = str(v.get("verify_rows_source") or "").strip()
    return f"at {rows:,.0f} verify rows per stream" + (f" ({why})" if why else "")


def claim_values(c: Mapping[str, Any], v: Mapping[str, Any],
                 predictions: Mapping[str, Any] | None = None) -> list[Value]:
    """One claim's values, named ``<id>.<field>``: the five asks (streams and relation,
    per-stream speed, context, drafting rows and acceptance, definition), its verdict and
    what this card's runs predict for it on its own card (``predictions``: id -> tok/s, or
    :func:`prediction_of`'s dict with what was carried and assumed in ``words`` and, where
    there is no number, the ``reason``; absent: :data:`PREDICTION_REASON`, no number)."""
    i, src = c["id"], f"claims.json {c['id']}"
    vsrc = f"verdicts.json {c['id']}"
    m = METRICS[c["metric"]]
    running = number(c.get("streams_running"))
    spec = str(c.get("spec_method") or "")
    spec = "" if spec.lower() in ("none", "no", "off") else spec
    k = number(c.get("spec_draft_tokens"))
    tau = number(v.get("tau_needed"))
    pred = (predictions or {}).get(i)
    p = pred if isinstance(pred, Mapping) else {"tok_s": pred, "words": "", "reason": ""}
    local = p.get("tok_s")
    agg = number(v.get("aggregate_tok_s")) or float(c["value"])
    out = [word(f"{i}.id", i, src), word(f"{i}.system", c["system"], src),
           num(f"{i}.value", c["value"], "tok/s", src, "{:,.1f}"),
           word(f"{i}.printed", tok(c["value"]), src),
           word(f"{i}.card", str(c["card"]).upper().replace("RTX", "RTX "), src),
           num(f"{i}.streams", c["streams"], "streams", src, "{:,}"),
           word(f"{i}.relation", _relation(c), src),
           flag(f"{i}.many", int(c["streams"]) > 1, src),
           flag(f"{i}.queued", bool(running and running < c["streams"]), src),
           num(f"{i}.running", running, "streams", src, "{:,.0f}") if running
           else word(f"{i}.running", "all", src),
           num(f"{i}.per_stream", v.get("per_stream_tok_s") or c["per_stream_tok_s"],
               "tok/s", vsrc, "{:,.1f}"),
           flag(f"{i}.has_context", bool(number(c.get("context_tokens"))), src),
           num(f"{i}.context", number(c.get("context_tokens")), "tokens", src, "{:,.0f}")
           if number(c.get("context_tokens")) else word(f"{i}.context", "not stated", src),
           flag(f"{i}.drafts", bool(spec), src),
           word(f"{i}.spec", spec or "none", src),
           num(f"{i}.rows", k + 1, "rows per stream per step", src, "{:,.0f}") if k
           else word(f"{i}.rows", "not stated", src),
           flag(f"{i}.has_rows", bool(k), src),
           word(f"{i}.rows_label", label_words(v.get("label_speculation_rows")), vsrc),
           word(f"{i}.acceptance", label_words(v.get("label_speculation_acceptance")), vsrc),
           word(f"{i}.definition", m.label, f"metrics {m.name}"),
           word(f"{i}.definition_words", m.definition, f"metrics {m.name}"),
           word(f"{i}.verdict", str(v["verdict"]), vsrc),
           flag(f"{i}.needs_drafter", v["verdict"] == DRAFTER, vsrc),
           flag(f"{i}.reproduced", v["verdict"] == REPRODUCED, vsrc),
           flag(f"{i}.other_verdict", v["verdict"] not in (DRAFTER, REPRODUCED), vsrc),
           num(f"{i}.roofline", number(v.get("roofline_tok_s")), "tok/s", vsrc),
           num(f"{i}.over_roofline", number(v.get("claim_over_roofline")), "fraction", vsrc,
               X2),
           num(f"{i}.tau", tau, "tokens per stream per step", vsrc, X2) if tau
           else word(f"{i}.tau", "none", vsrc),
           word(f"{i}.tau_rows", tau_rows_words(v), vsrc),
           flag(f"{i}.predicted", local is not None, "update predictions"),
           num(f"{i}.local", local, "tok/s", "update predictions") if local is not None
           else word(f"{i}.local", p.get("reason") or PREDICTION_REASON,
                     "verdicts.json carried_reason" if p.get("reason")
                     else "optional finding 'local prediction'"),
           flag(f"{i}.has_local_words", bool(p.get("words")), vsrc),
           word(f"{i}.local_words", p.get("words") or "none", vsrc + " carried_assumptions"),
           num(f"{i}.local_ratio", agg / local if local else None, "claim over carried model",
               vsrc, X2)]
    return out


def _subject(part: str) -> str:
    """An assumption's subject: its first two words ("SM clock", "int8 activations")."""
    return " ".join(part.split()[:2])


def words_after(words: str, earlier: Sequence[tuple[str, str]]) -> str:
    """A claim's carried-model words (assumptions joined by "; ") said against a claim the
    Update printed before it: ``earlier`` is (printed figure, words) in the Update's order.
    Of the earlier claims that assumed nothing this one does not (each of their assumptions'
    subjects is among this claim's), the one with the fewest differences is named, "as for
    the 1,035 tok/s above", followed by "but" and this claim's assumptions that differ or
    are new; unchanged when no earlier claim qualifies."""
    parts = words.split("; ")
    mine = {_subject(p) for p in parts}
    best: tuple[int, str, list[str]] | None = None
    for printed, prev in earlier:
        had = prev.split("; ")
        if not had or any(_subject(p) not in mine for p in had):
            continue
        rest = [p for p in parts if p not in had]
        if best is None or len(rest) < best[0]:
            best = (len(rest), printed, rest)
    if best is None or len(best[2]) == len(parts):
        return words
    _, printed, rest = best
    return f"as for the {printed} tok/s above" + (f", but {'; '.join(rest)}" if rest else "")


def family_values(families: Sequence[Mapping[str, Any]], claims: Sequence[Mapping[str, Any]],
                  verdicts: Sequence[Mapping[str, Any]], source: str,
                  predictions: Mapping[str, float] | None = None) -> list[Value]:
    """Every family's claims (:func:`claim_values`) and the lead's counts of the headline
    claims' verdicts; a family id the registry or the verdicts lack is refused by name."""
    by_c = {c["id"]: c for c in claims}
    by_v = {v["id"]: v for v in verdicts}
    out: list[Value] = []
    kinds: list[str] = []
    predicted = 0
    said_before: list[tuple[str, str]] = []  # (printed figure, carried-model words)
    carried = sum(1 for fam in families for i in fam["claims"]
                  if i in by_v and by_v[i]["verdict"] in CARRIED_KINDS)
    for fam in families:
        for i in fam["claims"]:
            if i not in by_c or i not in by_v:
                raise ValueError(f"{source}: family '{fam['key']}': claim '{i}' is not "
                                 + ("in the registry" if i not in by_c else "in verdicts.json"))
            vals = claim_values(by_c[i], by_v[i], predictions)
            at = {x.name: n for n, x in enumerate(vals)}
            said = vals[at[f"{i}.local_words"]]
            if vals[at[f"{i}.has_local_words"]].value:
                short = words_after(str(said.value), said_before)
                said_before.append((vals[at[f"{i}.printed"]].text, str(said.value)))
                vals[at[f"{i}.local_words"]] = word(said.name, short, said.source)
            predicted += sum(1 for x in vals if x.name == f"{i}.predicted" and x.value)
            out += vals
            kinds.append(str(by_v[i]["verdict"]))
    out += [num("lead.claims", len(kinds), "claims", source, "{:,}"),
            num("lead.drafter", kinds.count(DRAFTER), "claims", source, "{:,}"),
            num("lead.reproduced", kinds.count(REPRODUCED), "claims", source, "{:,}"),
            num("lead.other", len(kinds) - kinds.count(DRAFTER) - kinds.count(REPRODUCED)
                - carried, "claims", source, "{:,}"),
            num("lead.carried", carried, "claims", source, "{:,}"),
            flag("lead.has_carried", carried > 0, source),
            num("lead.predicted", predicted, "claims", "update predictions", "{:,}"),
            flag("lead.has_predicted", predicted > 0, "update predictions")]
    return out


def _one(d: pd.DataFrame, what: str) -> pd.Series:
    if d.empty:
        raise ValueError(f"update values: no step for {what}")
    return d.iloc[0]


def open_question(f: pd.DataFrame) -> list[Value]:
    """The article's open question: eight long-prompt streams admitted at once (one wave,
    as many requests as streams), decode read only while all decode, against the mean-TPOT
    reading of the same steps, per format."""
    src = "runs.csv, one-wave long-prompt steps"
    many = f[f["long"] & (f["waves"] > 1)]
    if many.empty:
        raise ValueError("update values: open question: no several-wave long-prompt step "
                         "to take the article's prompt length from")
    prompt = many["input_len"].mode().iloc[0]
    one = f[(f["input_len"] == prompt) & (f["waves"] == 1) & (f["streams"] == 8)
            & f["decode"].notna()]
    one = levels(one, ["weight_format"]) if not one.empty else one
    out = []
    contexts = set()
    for fm in ("bf16", "fp8"):
        r = _one(one[one["weight_format"] == fm], f"{fm} eight long prompts in one wave")
        n = int(r["streams"])
        contexts.add(int(r["context_tokens_per_stream"]))
        out += [num(f"open.{fm}.decode", r["decode"], "tok/s", src, "{:,.1f}"),
                num(f"open.{fm}.per_stream", r["decode"] / n, "tok/s", src, "{:,.1f}"),
                num(f"open.{fm}.eta", r["share"], "fraction", src, PCT),
                num(f"open.{fm}.mean", r["streams_x_1000_over_mean_tpot_tok_s"], "tok/s",
                    src, "{:,.1f}"),
                num(f"open.{fm}.mean_per_stream",
                    r["streams_x_1000_over_mean_tpot_tok_s"] / n, "tok/s", src, "{:,.1f}")]
    if len(contexts) != 1:
        raise ValueError(f"update values: open question: the formats' steps hold different "
                         f"contexts per stream ({sorted(contexts)}), not one level")
    out += [num("open.streams", 8, "streams", src, "{:,}"),
            num("open.prompt", int(prompt), "tokens", src, "{:,}"),
            num("open.context", contexts.pop(), "tokens", src, "{:,}")]
    return out


def long_values(x: Finding) -> list[Value]:
    """Long prompts in two waves against short prompts, per format: the largest gap of the
    long-prompt share under (or over) the short prompts' at the same streams, in points."""
    src = "finding 'long prompts'"
    r = pd.DataFrame(x.rows)
    r = r[r["short_share"].notna()]
    out = [flag("long.holds", x.holds, src)]
    for fm, g in r.groupby("weight_format"):
        gap = (g["share"] - g["short_share"])
        worst = gap.loc[gap.abs().idxmax()]
        out += [num(f"long.{fm}.gap", abs(worst) * 100, "points", src, "{:.0f}"),
                flag(f"long.{fm}.under", bool((gap <= -UNDER).all()), src)]
    return out


def context_values(x: Finding) -> list[Value]:
    """η at the shortest and longest context at the most streams of the context ladder, and
    the step time one more token of context costs per stream there (κ over the KV rate)."""
    src = "finding 'context'"
    r = pd.DataFrame(x.rows)
    n = r["streams"].max()
    r = r[r["streams"] == n]
    out = [num("ctx.streams", n, "streams", src, "{:,.0f}"),
           num("ctx.lo", r["context_tokens_per_stream"].min(), "tokens", src, "{:,.0f}"),
           num("ctx.hi", r["context_tokens_per_stream"].max(), "tokens", src, "{:,.0f}")]
    for fm, g in r.groupby("weight_format"):
        g = g.sort_values("context_tokens_per_stream")
        out += [num(f"ctx.{fm}.eta_lo", g["share"].iloc[0], "fraction", src, PCT),
                num(f"ctx.{fm}.eta_hi", g["share"].iloc[-1], "fraction", src, PCT)]
    return out


def context_ns(f: pd.DataFrame, x: Finding) -> list[Value]:
    """ns of step time per token of context per stream at the ladder's most streams: each
    format's KV bytes per token over its KV read rate (the context finding's line)."""
    src = "finding 'context' with the engine's KV bytes per token"
    r = pd.DataFrame(x.rows)
    n = r["streams"].max()
    out = []
    for fm, g in r[r["streams"] == n].groupby("weight_format"):
        kappa = float(f.loc[f["weight_format"] == fm, "kv_bytes_per_token"].iloc[0])
        out.append(num(f"ctx.{fm}.ns", kappa / (g["kv_gb_s"].iloc[0] * 1e9) * 1e9,
                       "ns per token per stream", src, "{:.1f}"))
    return out


def growth_values(x: Finding) -> list[Value]:
    """The BF16 step from one stream to the most, its growth against its bytes', and the
    power state of the steps past the last one under the cap: mean SM clock and the
    highest draw against the enforced limit."""
    src = "finding 'step growth'"
    r = pd.DataFrame(x.rows).sort_values("streams")
    lo, hi = r.iloc[0], r.iloc[-1]
    at_cap = r["telemetry_max_power_w"] >= AT_CAP * r["telemetry_power_limit_w"]
    capped, cool = r[at_cap], r[~at_cap]
    ref = cool.iloc[-1] if not cool.empty else lo
    first = capped.iloc[0] if not capped.empty else hi
    return [num("growth.lo_ms", lo["step_ms"], "ms", src, "{:.1f}"),
            num("growth.hi_ms", hi["step_ms"], "ms", src, "{:.1f}"),
            num("growth.hi_streams", hi["streams"], "streams", src, "{:,.0f}"),
            num("growth.times", x.numbers["growth"], "times", src, X2),
            num("growth.bytes", x.numbers["bytes_growth"], "times", src, X2),
            flag("growth.capped", not capped.empty, src),
            num("growth.cap_streams", first["streams"], "streams", src, "{:,.0f}"),
            num("growth.limit", hi["telemetry_power_limit_w"], "W", src, "{:,.0f}"),
            num("growth.clock_hi", hi["telemetry_mean_sm_clock_mhz"], "MHz", src, "{:,.0f}"),
            num("growth.clock_ref", ref["telemetry_mean_sm_clock_mhz"], "MHz", src,
                "{:,.0f}"),
            num("growth.ref_streams", ref["streams"], "streams", src, "{:,.0f}")]


def energy_values(f: pd.DataFrame) -> list[Value]:
    """Output tokens per joule of both formats at the most streams both ran at their main
    context (the same streams, not each format's own most), and BF16's at its own most."""
    src = "runs.csv, tokens_per_joule where every stream decodes"
    d = main_context(decode_levels(f[f["tokens_per_joule"].notna()]))
    a, b = (d[d["weight_format"] == k].set_index("streams") for k in ("fp8", "bf16"))
    both = a.index.intersection(b.index)
    if len(both) == 0:
        raise ValueError("update values: energy: no stream count run on both formats")
    n = max(both)
    return [num("energy.streams", n, "streams", src, "{:,.0f}"),
            num("energy.fp8", a.loc[n, "tokens_per_joule"], "tokens per joule", src, X2),
            num("energy.bf16", b.loc[n, "tokens_per_joule"], "tokens per joule", src, X2)]


def card_values(found: Sequence[Finding], f: pd.DataFrame) -> list[Value]:
    """The values of this card's findings that the body names; a finding the body needs
    that does not hold is refused by name (its sentence would be false)."""
    by = {x.key: x for x in found}
    for key in ("bandwidth share", "what FP8 buys", "context", "step growth", "long prompts",
                "second wave", "cannot say"):
        if key not in by:
            raise ValueError(f"update values: finding '{key}' was not computed")
    fp8 = by["what FP8 buys"]
    wave = by["second wave"]
    free = f[~f["ignore_eos"].astype(bool) & ~f["held_prefill"]]
    out = [*open_question(f), *long_values(by["long prompts"]), *share_values(f),
           *low_values(f), *alt_values(f),
           *context_values(by["context"]), *context_ns(f, by["context"]),
           *growth_values(by["step growth"]), *energy_values(f),
           flag("fp8.holds", fp8.holds, "finding 'what FP8 buys'"),
           num("fp8.gain", fp8.numbers.get("gain_median"), "times", "finding 'what FP8 buys'",
               X2),
           num("fp8.bytes", fp8.numbers.get("bytes_median"), "times",
               "finding 'what FP8 buys'", X2),
           flag("wave.holds", wave.holds, "finding 'second wave'"),
           num("wave.max", max(abs(wave.numbers.get("change_min", 0)),
                               abs(wave.numbers.get("change_max", 0))), "fraction",
               "finding 'second wave'", "{:.1%}"),
           flag("cannot.holds", by["cannot say"].holds, "finding 'cannot say'"),
           num("cannot.cap", free["output_len"].max() if not free.empty else None, "tokens",
               "runs.csv, requests without --ignore-eos", "{:,.0f}")]
    return out
