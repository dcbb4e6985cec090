"""The words of the predictions kept before a run (:mod:`claimcheck.predict.beforehand`):
a prediction's summary line, its step table and legend, the appendix section, the body's
sentence and paragraph, and the plain-text lines of ``claimcheck model --before``. Every
number from the rows. Units: tok/s (aggregate: summed over the streams; per stream =
aggregate / streams), ms (TPOT), s (TTFT, load).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from claimcheck.config.protocols import relation_words
from claimcheck.files import mdtext as md
from claimcheck.files.frames import flag, number
from claimcheck.predict.beforehand import NOT_MEASURED, summaries, summary
from claimcheck.verdicts.verdicts import TOLERANCE

METRIC_WORDS = {"e2e": "end to end", "decode": "decode"}


def _pct(v: float | None) -> str:
    return md.num(v, "{:+.1%}")


def _ctx(r: Mapping[str, Any]) -> str:
    return f"{int(r['input_len']):,} + {int(r['output_len']):,}"


def miss_words(m: Mapping[str, Any] | None) -> str:
    """'+9.5% on end to end at 48 streams of 12,000-token prompts'."""
    if not m:
        return "no miss to name (no error could be computed)"
    n = int(m["streams"])
    return (f"{m['error']:+.1%} on {METRIC_WORDS[m['metric']]} at {n} "
            f"stream{'' if n == 1 else 's'} of {int(m['input_len']):,}-token prompts")


def summary_line(s: Mapping[str, Any]) -> str:
    """One line of a prediction's :func:`~claimcheck.predict.beforehand.summary`: the
    file, the commit it was written at, the run it is set against and what it adds up to,
    with the load seconds per repeat."""
    head = (f"`{s['prediction_file']}` (written at commit {s.get('written_at_commit') or '?'}"
            + (f"; model: {s['what_model']}" if s.get("what_model") else "") + ")")
    if s["status"] == NOT_MEASURED:
        return (f"{head}: {NOT_MEASURED} (no run of {s['protocol']} on {s['engine']}, "
                f"{s['card']}); {s['predicted_steps']} "
                f"step{'' if s['predicted_steps'] == 1 else 's'} predicted")
    n, tol = s["measured"], s["tolerance"]
    of = (f"{n} measured steps" if n == s["steps"]
          else f"{n} measurements ({s['steps']} steps x {s['repeats']} repeats)")
    dummy = " (dummy weights)" if s.get("weights") == "dummy" else ""
    miss = s.get("largest_miss")
    line = (f"{head} against {s['run']}{dummy}: {s['within']} of {of} within {tol:.0%} on "
            f"both end to end and decode aggregate, {s['within_e2e']} within {tol:.0%} on end "
            f"to end alone; mean |error| {md.num(s['mean_abs_e2e_error'], '{:.1%}')} end to "
            f"end, {md.num(s['mean_abs_decode_error'], '{:.1%}')} decode; largest miss "
            + (f"{miss_words(miss)} (step {miss['step']})" if miss else "none computed"))
    line += (f". Load per repeat: predicted {s['predicted_load_s_per_repeat']:,.0f} s (first "
             "send to last token as simulated; each step's client start-up and the engine "
             "start left out), measured "
             f"{s['measured_send_to_last_s_per_repeat']:,.0f} s first send to last token "
             f"summed over the steps and {s['measured_client_s_per_repeat']:,.0f} s of the "
             "clients' spans (their start-up included)")
    if s.get("run_duration_s"):
        line += (f"; the whole run, {s['repeats']} repeat(s): {s['run_duration_s']:,.0f} s "
                 "(engine start left out)")
    return line + "."


def step_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The Markdown step table of one prediction's rows: predicted / measured, each with
    its error, every tok/s column labelled."""
    head = ["step", "rep", "streams", "context per stream (in + out tokens)",
            "e2e aggregate tok/s pred / meas", "e2e err",
            "e2e per stream tok/s pred / meas", "decode aggregate tok/s pred / meas",
            "decode err", "median TPOT ms pred / meas", "median TTFT s pred / meas",
            f"within {TOLERANCE:.0%} on both"]
    body = []
    for r in rows:
        n = int(r["streams"])
        pe, me = number(r.get("predicted_e2e_tok_s")), number(r.get("measured_e2e_tok_s"))
        body.append([
            str(r["step"]), md.num(number(r.get("repeat")), "{:.0f}"), str(n), _ctx(r),
            f"{md.num(pe)} / {md.num(me)}", _pct(number(r.get("e2e_error"))),
            f"{md.num(None if pe is None else pe / n)} / "
            f"{md.num(None if me is None else me / n)}",
            f"{md.num(number(r.get('predicted_decode_tok_s')))} / "
            f"{md.num(number(r.get('measured_decode_tok_s')))}",
            _pct(number(r.get("decode_error"))),
            f"{md.num(number(r.get('predicted_median_tpot_ms')), '{:.2f}')} / "
            f"{md.num(number(r.get('measured_median_tpot_ms')), '{:.2f}')}",
            f"{md.num(number(r.get('predicted_median_ttft_s')), '{:.3f}')} / "
            f"{md.num(number(r.get('measured_median_ttft_s')), '{:.3f}')}",
            "yes" if flag(r.get("within")) else "no"])
    return md.table(head, body)


def legend(kind: str | None) -> str:
    """What every tok/s column of :func:`step_table` is."""
    return (f"Aggregates in tok/s summed over the streams ({relation_words(kind)}); per "
            "stream = aggregate / streams; context per stream = input + output tokens; end to "
            "end (e2e) = all output tokens / first send to last token (prefill included); "
            "decode = tokens after each request's first / time with any request decoding "
            "(first tokens and the time before them left out); error = predicted / measured "
            "- 1. Median TPOT: time per output token after the first.")


def appendix_section(rows: Sequence[Mapping[str, Any]]) -> str:
    """"### Predicted before the run": one line per prediction file (its commit, its run,
    its summary), then each one's step table."""
    out = ["### Predicted before the run", "",
           "Predictions written and committed before the run they are set against "
           "(`data/raw/predictions/`, `claimcheck predict --json`); every measured number "
           "read off the run's token timeline as in the model table.", ""]
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["prediction_file"], r.get("run") or ""), []).append(r)
    out += [f"- {summary_line(summary(g))}" for g in groups.values()]
    kinds = sorted({str(g[0].get("kind")) for g in groups.values()
                    if g[0].get("status") != NOT_MEASURED})
    for k in kinds:
        words = legend(k if k != "None" else None)
        out.append(f"\nIn the step tables, {words[0].lower()}{words[1:]}")
    for (f, run), g in groups.items():
        if g[0].get("status") == NOT_MEASURED:
            continue
        dummy = " (dummy weights)" if g[0].get("weights") == "dummy" else ""
        out += ["", f"#### `{f}` against {run}{dummy}", "", step_table(g)]
    return "\n".join(out) + "\n"


def body_sentence(summary_rows: Sequence[Mapping[str, Any]]) -> str:
    """One sentence per engine (card and engine, first-seen order) from
    :func:`~claimcheck.predict.beforehand.summary` rows: the last measured prediction
    listed for it leads (the index lists them in the order written); any other for the
    same engine is named in a clause with its own count. Every number from the rows."""
    groups: dict[tuple[Any, Any], list[Mapping[str, Any]]] = {}
    for s in summary_rows:
        if s.get("status") == "measured":
            groups.setdefault((s["card"], s["engine"]), []).append(s)
    out = []
    for g in groups.values():
        lead, others = g[-1], g[:-1]
        fmt = (lead.get("weight_format") or "").upper() or lead["engine"]
        dummy = ", dummy weights" if lead.get("weights") == "dummy" else ""
        of = (f"{lead['measured']} {fmt} steps" if lead["measured"] == lead["steps"]
              else f"{lead['measured']} {fmt} measurements")
        rest = "".join(f"; the predictions of commit {o.get('written_at_commit') or '?'}"
                       f" ({o.get('what_model') or 'an earlier model'}) land within "
                       f"{o['tolerance']:.0%} on {o['within']} of {o['measured']}"
                       for o in others)
        out.append(
            f"Written before the {lead['protocol']} protocol ran (commit "
            f"{lead.get('written_at_commit') or '?'}), the model's predictions land within "
            f"{lead['tolerance']:.0%} of the measured end-to-end and decode speed on "
            f"{lead['within']} of {of} ({lead['engine']}{dummy}); its largest miss is "
            f"{miss_words(lead.get('largest_miss'))}{rest}.")
    return " ".join(out)


def render(rows: Sequence[Mapping[str, Any]], tolerance: float = TOLERANCE) -> list[str]:
    """Plain-text lines for ``claimcheck model RUN --before PRED``: the summary line, the
    legend and one line per row."""
    s = summary(rows, tolerance)
    lines = [summary_line(s).replace("`", ""), legend(s.get("kind")),
             f"{'step':>4} {'rep':>3} {'streams':>7} {'in+out':>11} {'pred e2e':>9} "
             f"{'meas e2e':>9} {'err':>6} {'e2e/stream p/m':>15} {'pred dec':>9} "
             f"{'meas dec':>9} {'err':>6} {'TPOT ms p/m':>13} {'TTFT s p/m':>13}  within"]
    for r in rows:
        n = int(r["streams"])
        pe, me = number(r["predicted_e2e_tok_s"]), number(r["measured_e2e_tok_s"])
        lines.append(
            f"{r['step']:>4} {r['repeat']:>3} {n:>7} "
            f"{int(r['input_len']):>6}+{int(r['output_len']):<4} {md.num(pe):>9} "
            f"{md.num(me):>9} {_pct(r['e2e_error']):>6} "
            f"{md.num(None if pe is None else pe / n):>7}/"
            f"{md.num(None if me is None else me / n):<7} "
            f"{md.num(r['predicted_decode_tok_s']):>9} "
            f"{md.num(r['measured_decode_tok_s']):>9} {_pct(r['decode_error']):>6} "
            f"{md.num(r['predicted_median_tpot_ms'], '{:.2f}'):>6}/"
            f"{md.num(r['measured_median_tpot_ms'], '{:.2f}'):<6} "
            f"{md.num(r['predicted_median_ttft_s'], '{:.3f}'):>6}/"
            f"{md.num(r['measured_median_ttft_s'], '{:.3f}'):<6}  "
            + ("yes" if r["within"] else "no"))
    return lines


def _step_row(rows: Sequence[Mapping[str, Any]], s: Mapping[str, Any]
              ) -> Mapping[str, Any] | None:
    """The table row of a summary's largest miss (same file, step and repeat)."""
    m = s.get("largest_miss") or {}
    return next((r for r in rows if r.get("prediction_file") == s["prediction_file"]
                 and r.get("step") == m.get("step") and r.get("repeat") == m.get("repeat")),
                None)


def body_paragraph(rows: Sequence[Mapping[str, Any]]) -> str:
    """The Update body's words on the predictions kept before a run, from the table rows
    (:func:`~claimcheck.pipeline.beforehand_index.table`): per protocol, the latest-written
    predictions' count within the tolerance on both end to end and decode per weight
    format, the earlier predictions' counts, and each format's largest miss with its
    step's median TTFT and TPOT predicted against measured. No run or engine names (the
    appendix has them); '' when nothing kept before a run was measured."""
    sums = [s for s in summaries(rows) if s.get("status") == "measured"]
    if not sums:
        return ""
    out = []
    for proto in dict.fromkeys(s["protocol"] for s in sums):
        mine = [s for s in sums if s["protocol"] == proto]
        commits = list(dict.fromkeys(s.get("written_at_commit") or "?" for s in mine))
        lead = [s for s in mine if (s.get("written_at_commit") or "?") == commits[-1]]
        fmt = lambda s: (s.get("weight_format") or "").upper() or "?"  # noqa: E731
        counts = " and ".join(f"{s['within']} of {s['measured']} {fmt(s)} steps"
                              for s in lead)
        text = (f"Set against the predictions written before the {proto.replace('-', ' ')} "
                f"ran (commit {commits[-1]}), the measured steps land within "
                f"{lead[0]['tolerance']:.0%} on both end to end and decode on {counts}")
        for c in commits[:-1]:
            old = [s for s in mine if (s.get("written_at_commit") or "?") == c]
            text += (f" (the predictions of commit {c}, before its "
                     f"{'latest term' if len(commits) == 2 else 'later terms'}: "
                     + " and ".join(f"{s['within']} {fmt(s)}" for s in old) + ")")
        misses = []
        for s in lead:
            r = _step_row(rows, s)
            words = miss_words(s.get("largest_miss"))
            if r is not None and r.get("measured_median_ttft_s") is not None:
                first = ", the run's first step" if r["step"] == 0 else ""
                words += (f" ({fmt(s)}{first}:"
                          f" median TTFT {float(r['predicted_median_ttft_s']):.2f} s predicted, "
                          f"{float(r['measured_median_ttft_s']):.2f} s measured; median TPOT "
                          f"{float(r['predicted_median_tpot_ms']):.1f} ms against "
                          f"{float(r['measured_median_tpot_ms']):.1f})")
            misses.append(words)
        out.append(text + "; the largest misses are " + " and ".join(misses) + ".")
    return " ".join(out)
