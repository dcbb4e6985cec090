"""The Update's named values for what a verify costs on this card (issue 41 item 6), from
data/derived/speculation.csv (:mod:`claimcheck.pipeline.spec_table`). Pure: rows in, values
out. The finding holds where a drafting run has a step at one stream and one at its most
streams, each with the plain steps at the same streams and rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from claimcheck.update.template import Value, flag, num, word

SRC = "speculation.csv"
MS = "{:.1f}"
X2 = "{:.2f}"
PCT1 = "{:.1%}"
SIGNED = "{:+.1%}"
NAMES = ("spec.k", "spec.rows", "spec.kept", "spec.streams", "spec.rows_total", "spec.step",
         "spec.plain_streams", "spec.plain_rows", "spec.over_rows", "spec.over_streams",
         "spec.one_step", "spec.one_plain", "spec.one_extra", "spec.one_over_streams",
         "spec.tpot", "spec.model_err", "spec.loo_err", "spec.overhead", "spec.bend",
         "spec.hand_lo", "spec.hand_hi", "spec.run", "spec.other_lo", "spec.other_hi")
NAMES2 = ("spec2.k", "spec2.rows", "spec2.kept", "spec2.streams", "spec2.rows_total",
          "spec2.step", "spec2.plain_rows", "spec2.over_rows", "spec2.overhead",
          "spec2.other_lo", "spec2.other_hi", "spec2.run")


def _span(rs: Sequence[Mapping[str, Any]], key: str) -> tuple[Any, Any]:
    xs = [r[key] for r in rs if r.get(key) is not None]
    return (min(xs), max(xs)) if xs else (None, None)


def _run_values(prefix: str, run: str, rs: Sequence[Mapping[str, Any]], src: str
                ) -> list[Value]:
    """The values both drafting runs say, named ``prefix.*``: k, rows verified, tokens kept,
    the step at its most streams against a plain step of as many rows, its fitted draft
    pass overhead, the model fitted on the other run alone against its steps, the run."""
    top = rs[-1]
    rows_per = int(top["verify_rows_per_stream"])
    kept = [float(r["tokens_kept_per_verify"]) for r in rs]
    lo, hi = _span(rs, "model_other_step_error")
    return [
        num(f"{prefix}.k", rows_per - 1, "tokens", src, "{:d}"),
        num(f"{prefix}.rows", rows_per, "rows", src, "{:d}"),
        num(f"{prefix}.kept", round(sum(kept) / len(kept), 1), "tokens", src, "{:.1f}"),
        num(f"{prefix}.streams", int(top["streams"]), "streams", src, "{:d}"),
        num(f"{prefix}.rows_total", int(top["rows_per_step"]), "rows", src, "{:d}"),
        num(f"{prefix}.step", top["measured_step_ms"], "ms", src, MS),
        num(f"{prefix}.plain_rows", top["plain_step_same_rows_ms"], "ms",
            f"{src}: {top['plain_same_rows_source']}", MS),
        num(f"{prefix}.over_rows", top["step_over_plain_same_rows"], "ratio", src, X2),
        num(f"{prefix}.overhead", top.get("model_draft_pass_overhead_ms"), "ms", src,
            "{:.2f}"),
        num(f"{prefix}.other_lo", lo, "fraction", src, SIGNED),
        num(f"{prefix}.other_hi", hi, "fraction", src, SIGNED),
        word(f"{prefix}.run", run, src)]


def _usable(r: Mapping[str, Any]) -> bool:
    keys = ("measured_step_ms", "plain_step_same_streams_ms", "plain_step_same_rows_ms")
    return all(r.get(k) is not None for k in keys)


def spec_values(rows: Sequence[Mapping[str, Any]] | None, figure: str | None) -> list[Value]:
    """The ``spec.*`` values and the ``spec.has`` flag; every name present, unfilled (None)
    where the finding does not hold. The first drafting run in name order is the one said,
    at one stream and at its most streams."""
    usable = [r for r in rows or [] if _usable(r)]
    names = sorted({str(r["run"]) for r in usable})
    run = names[0] if names else None
    rs = sorted((r for r in usable if r["run"] == run), key=lambda r: int(r["streams"]))
    holds = len(rs) >= 2 and int(rs[0]["streams"]) == 1
    out = [flag("spec.has", holds, SRC), word("fig.speculation", figure, "update rule figures"),
           flag("fig.has_speculation", bool(figure) and holds, "update rule figures")]
    if not holds:
        return out + [flag("spec.has_other", False, SRC),
                      flag("spec.overhead_differs", False, SRC)] + [
            Value(n, None, "", "", SRC) for n in NAMES + NAMES2]
    out += _second(usable, names[1] if len(names) > 1 else None, rs)
    one, top = rs[0], rs[-1]
    src = f"{SRC}, run {run}"
    model = [abs(r["model_step_error"]) for r in rs if r.get("model_step_error") is not None]
    loo = [abs(r["model_loo_step_error"]) for r in rs
           if r.get("model_loo_step_error") is not None]
    hand = [r["hand_step_error"] for r in rs if r.get("hand_step_error") is not None]
    return out + _run_values("spec", str(run), rs, src) + [
        num("spec.plain_streams", top["plain_step_same_streams_ms"], "ms",
            f"{src}: {top['plain_same_streams_source']}", MS),
        num("spec.over_streams", top["step_over_plain_same_streams"], "ratio", src, X2),
        num("spec.one_step", one["measured_step_ms"], "ms", src, MS),
        num("spec.one_plain", one["plain_step_same_streams_ms"], "ms", src, MS),
        num("spec.one_extra", one["measured_step_ms"] - one["plain_step_same_streams_ms"],
            "ms", src, MS),
        num("spec.one_over_streams", one["step_over_plain_same_streams"], "ratio", src, X2),
        num("spec.tpot", top["measured_median_tpot_ms"], "ms", src, MS),
        num("spec.model_err", max(model) if model else None, "fraction", src, PCT1),
        num("spec.loo_err", max(loo) if loo else None, "fraction", src, PCT1),
        num("spec.bend", top.get("model_bend"), "ratio", src, X2),
        num("spec.hand_lo", min(hand) if hand else None, "fraction", src, SIGNED),
        num("spec.hand_hi", max(hand) if hand else None, "fraction", src, SIGNED)]


def _second(usable: Sequence[Mapping[str, Any]], run: str | None,
            first: Sequence[Mapping[str, Any]]) -> list[Value]:
    """The ``spec2.*`` values of the second drafting run in name order (its k, rows, step at
    its most streams against plain steps of as many rows, the model fitted on the first
    run alone against its steps), and whether the two runs' own per-pass overheads differ
    by more than half (``spec.overhead_differs``); unfilled when there is no second run."""
    rs = sorted((r for r in usable if r["run"] == run), key=lambda r: int(r["streams"]))
    other = [r for r in rs if r.get("model_other_step_error") is not None]
    if not run or not rs or not other:
        return [flag("spec.has_other", False, SRC), flag("spec.overhead_differs", False, SRC)
                ] + [Value(n, None, "", "", SRC) for n in NAMES2]
    src = f"{SRC}, run {run}"
    a, b = (first[-1].get("model_draft_pass_overhead_ms"),
            rs[-1].get("model_draft_pass_overhead_ms"))
    return [flag("spec.has_other", True, src),
            flag("spec.overhead_differs", bool(a and b and abs(b / a - 1) > 0.5), src),
            *_run_values("spec2", run, rs, src)]
