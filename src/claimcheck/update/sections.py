"""The extra blocks of a protocol's Update section, each chosen by the protocol's data (its
``gate``, ``kind``, ``metrics`` and step fields), never by its name: the serving gate, the
admit-then-decode answer, the lanes stats line, the closed-loop table and the single-stream
points. Pure functions over loaded runs (each step one row of its table) and tidy claims;
Markdown out.

Every tok/s says its streams, per-stream speed, context per stream and whether it is decode
or end to end.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from claimcheck.config.protocols import Protocol
from claimcheck.files import mdtext as md
from claimcheck.readings import energy
from claimcheck.readings.definitions import per_stream, row_is_held_prefill
from claimcheck.readings.gate import Gate, LevelRow, check, verdict
from claimcheck.runs.run import Run
from claimcheck.runs.tables import measured_over


def is_reference(proto: Protocol, s: dict[str, Any]) -> bool:
    """Whether a step's level is marked ``reference`` in the protocol."""
    i = s["step"]
    return 0 <= i < len(proto.steps) and bool(proto.steps[i].reference)


def _replayed(proto: Protocol, claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ids = set(proto.source_claims)
    return [c for c in claims if c["id"] in ids]


# ------------------------------------------------------------------ the serving gate


def gate_block(proto: Protocol, runs: list[Run], claims: list[dict[str, Any]],
               nominal_w: dict[str, float] | None = None) -> str:
    """For a protocol with a ``gate``: per run the level table (median and min-max of the
    end-to-end aggregate over repeats, roofline, measured / predicted, tok/s per measured W)
    and the verdict line; then the replayed claims' tok/s per nominal W."""
    if not proto.gate:
        return ""
    g = Gate.from_dict(proto.gate)
    out = []
    for run in runs:
        lrows = []
        for s in run.rows:
            if s["status"] != "complete" or s.get("e2e_aggregate_tok_s") is None:
                continue
            lrows.append(LevelRow(
                streams=s["streams"], aggregate_tok_s=s["e2e_aggregate_tok_s"],
                reference=is_reference(proto, s),
                output_tokens=s.get("timeline_output_tokens"),
                energy_j=s.get("energy_j"), roofline_tok_s=s.get("roofline_tok_s")))
        seqs = run.provenance.engine_config.max_num_seqs
        res = check(lrows, g, seqs)
        table = [[f"{x.streams}" + (" (reference, not counted)" if x.reference else ""),
                  str(x.repeats), md.num(x.median_tok_s),
                  f"{x.min_tok_s:,.1f} – {x.max_tok_s:,.1f}",
                  md.num(per_stream(x.median_tok_s, x.streams, seqs)),
                  md.num(x.growth_pct, "{:+.1f}%"), md.num(x.roofline_tok_s, "{:,.0f}"),
                  md.num(measured_over(x.median_tok_s, x.roofline_tok_s), "{:.0%}"),
                  md.num(x.tok_s_per_w, "{:.2f}")] for x in res.levels]
        out += [f"Serving gate, {run.name} (server max-num-seqs {seqs or '?'}; aggregate = "
                "all output tokens / wall time, end to end, independent requests, one wave "
                "per level; roofline at η = 1 at the level's streams and context):", "",
                md.table(["Concurrency (streams)", "Repeats", "Median end to end, tok/s",
                        "Min – max, tok/s",
                        "Per stream (median / streams running at once), tok/s",
                        "Growth from previous level", "Roofline (η = 1), tok/s",
                        "Measured ÷ predicted", "tok/s per measured W (median)"],
                       table), "", verdict(res, g), ""]
    if out:
        out += ["tok/s per measured W: each step's output tokens / its "
                f"{energy_words(runs)}.", ""]
    nominal = nominal_lines(_replayed(proto, claims), nominal_w or {})
    if nominal:
        out += ["Published efficiency, per **nominal** watt (the power limit or the card's "
                "rated board power, not a measurement): " + "; ".join(nominal) + ".", ""]
    return "\n".join(out)


def energy_words(runs: list[Run]) -> str:
    """What the steps of ``runs`` measured their energy by (:mod:`claimcheck.readings.energy`):
    each source used, the fallback named with the steps it covers."""
    used = Counter(s.get("energy_source") for r in runs for s in r.rows
                   if s["status"] == "complete")
    parts = [f"{energy.SOURCE_WORDS[k]}" + ("" if k == energy.TELEMETRY else
                                             f" ({n} step{'s' if n != 1 else ''}, where "
                                             "telemetry does not cover the load window)")
             for k, n in sorted(used.items(), key=lambda kv: kv[0] != energy.TELEMETRY)
             if k is not None]
    return " and ".join(parts) if parts else "board energy (none recorded)"


def nominal_lines(claims: list[dict[str, Any]], nominal_w: dict[str, float]) -> list[str]:
    """Each claim's value / nominal watts (its power limit, else its card's rated power)."""
    out = []
    for c in claims:
        w = c.get("power_limit_w") or nominal_w.get(c["card"])
        if not w:
            continue
        src = "power limit" if c.get("power_limit_w") else "rated board power"
        out.append(f"{c['id']} {c['value']:,.1f} tok/s / {w:,.0f} W ({c['card']} {src}) = "
                   f"{c['value'] / w:.1f} tok/s per nominal W at {c['streams']} "
                   f"stream{'s' if c['streams'] != 1 else ''}")
    return out


# ------------------------------------------------------------------ admit, then decode


def span(lo: float, hi: float, fmt: str) -> str:
    """'lo–hi' in ``fmt``, or one value when both read the same."""
    a, b = fmt.format(lo), fmt.format(hi)
    return a if a == b else f"{a}–{b}"


def same_shape_steps(run: Run, s: dict[str, Any], others: list[Run]
                     ) -> list[tuple[Run, dict[str, Any]]]:
    """Reported steps of runs of other protocols on the same card and engine with the same
    prompt length and streams (another engine's numbers are not the same shape)."""
    mine = (run.provenance.card, run.provenance.engine)
    return [(r, o) for r in others if r.protocol.name != run.protocol.name
            and (r.provenance.card, r.provenance.engine) == mine
            for o in r.reported
            if o["streams"] == s["streams"] and o.get("input_len") == s.get("input_len")]


def admit_block(proto: Protocol, runs: list[Run], others: list[Run]) -> str:
    """For a protocol measuring ``all_streams_decoding``: per step, does decode alone (all
    streams decoding) sit on the roofline with each stream's context KV added, and how it
    compares with runs of the same prompt length and streams where prefills share steps."""
    if "all_streams_decoding" not in proto.metrics:
        return ""
    out: list[str] = []
    shares: list[float] = []
    ratios: list[float] = []
    for run in runs:
        seqs = run.provenance.engine_config.max_num_seqs
        for s in run.reported:
            got, roof = s.get("all_streams_decoding_tok_s"), s.get("roofline_tok_s")
            n = s["streams"]
            if got is None:
                out.append(f"- {n} streams: all {n} never decoded at once; no answer.")
                continue
            text = (f"- {n} streams, {s['input_len']:,} + {s['output_len']:,} tokens of "
                    f"context per stream: with all {n} decoding (prefills done) the aggregate "
                    f"is {got:,.0f} tok/s ({per_stream(got, n, seqs):.1f} per stream), "
                    + (f"{got / roof:.0%} of the roofline's {roof:,.0f} tok/s at {n} "
                       f"streams with each stream's {s['context_tokens_per_stream']:,} "
                       "tokens of KV added" if roof else "no roofline for this step"))
            if roof:
                shares.append(got / roof)
            near = same_shape_steps(run, s, others)
            ratios += [got / o["streams_x_1000_over_median_tpot_tok_s"] for _, o in near
                       if o.get("streams_x_1000_over_median_tpot_tok_s")]
            if near:
                agg = "streams_x_1000_over_median_tpot_tok_s"
                text += "; " + "; ".join(
                    f"{r.name} (prefills share steps) reads {o.get(agg) or 0:,.0f} tok/s by "
                    f"streams × 1000 / median TPOT and {o.get('e2e_aggregate_tok_s') or 0:,.0f} "
                    f"end to end, so decode alone is {got / o[agg]:.1f}× the former"
                    for r, o in near if o.get(agg))
            out.append(text + ".")
    if not out:
        return ""
    if shares:
        lo, hi = min(shares), max(shares)
        out.insert(0, "**Answer:** decode alone (all streams decoding, prefills done) reaches "
                   f"{span(lo, hi, '{:.0%}')} of the roofline with each stream's context KV "
                   f"added (η = 1), {'on' if lo >= 0.95 else 'below'} the line"
                   + (f", and {span(min(ratios), max(ratios), '{:.1f}×')} what the same "
                      "prompt length reads when prefills share the steps" if ratios else "")
                   + ".\n")
    return ("Does decode alone at this context sit on the roofline line? (decode only while "
            "all streams decode: from the last request's first token to the first request's "
            "last token)\n\n" + "\n".join(out) + "\n")


# ------------------------------------------------------------------ lanes

LANES_QUOTE = re.compile(r"([\d,]+) tok in ([\d.]+)\s*s.*?plan ([\d.]+)\s*ms.*?tail "
                         r"([\d.]+)\s*ms")


def lanes_arithmetic(tokens: float, wall_s: float, plan_s: float, tail_s: float,
                     decode_tok_s: float) -> dict[str, float]:
    """What a printed lanes line allows: tokens / wall, the decode window the printed decode
    rate implies (tokens / decode), and tokens over wall less plan, less tail, less both."""
    return {"e2e": tokens / wall_s, "decode_window_s": tokens / decode_tok_s,
            "less_plan": tokens / (wall_s - plan_s), "less_tail": tokens / (wall_s - tail_s),
            "less_both": tokens / (wall_s - plan_s - tail_s)}


def lanes_block(proto: Protocol, runs: list[Run], claims: list[dict[str, Any]]) -> str:
    """For a protocol measuring ``lanes_stats``: each reported step's stats line rebuilt
    from its token timeline, then, for each replayed claim whose quote prints a lanes line
    (tokens in wall, plan, tail) and its decode rate, whether its numbers close."""
    if "lanes_stats" not in proto.metrics:
        return ""
    out = ["Stats line rebuilt from the per-token timeline (decode = output tokens after "
           "each lane's first / time with at least one lane decoding; plan = first send to "
           "all lanes decoding; tail = last moment all lanes decode to the last token):", ""]
    for run in runs:
        for s in run.reported:
            if s.get("lanes_stats"):
                out.append(f"- {run.name}: `{s['lanes_stats']}`")
    out.append("")
    replayed = _replayed(proto, claims)
    for c in replayed:
        m = LANES_QUOTE.search(c.get("quote") or "")
        if not m or c["metric"] != "decode_aggregate":
            continue
        tokens, wall = float(m.group(1).replace(",", "")), float(m.group(2))
        plan, tail = float(m.group(3)) / 1e3, float(m.group(4)) / 1e3
        a = lanes_arithmetic(tokens, wall, plan, tail, c["value"])
        e2e = [x for x in replayed if x["metric"] == "e2e_aggregate" and x["run"] == c["run"]]
        printed = f" (printed {e2e[0]['value']:,.1f})" if e2e else ""
        out.append(
            f"- {c['id']}: {tokens:,.0f} / {wall:.2f} s = {a['e2e']:,.1f} tok/s{printed}: the "
            f"end-to-end figure closes. The decode rate {c['value']:,.0f} tok/s implies a "
            f"decode window of {tokens:,.0f} / {c['value']:,.0f} = {a['decode_window_s']:.2f} "
            f"s, but no printed interval gives it: removing plan gives "
            f"{a['less_plan']:,.0f}, tail {a['less_tail']:,.0f}, both "
            f"{a['less_both']:,.0f} tok/s. The decode window cannot be recovered from the "
            "printed intervals alone.")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ closed loop


def closed_loop_block(proto: Protocol, runs: list[Run], claims: list[dict[str, Any]]
                      ) -> str:
    """For a ``closed_loop`` protocol: per client count the aggregate (all output tokens /
    wall), per request (tokens / (last chunk - first chunk), mean) and the scaling C / 1,
    beside the replayed claims' scaling computed from their values."""
    if proto.kind != "closed_loop":
        return ""
    sets: dict[tuple[Any, ...], dict[int, float]] = {}
    for c in _replayed(proto, claims):
        if c["metric"] == "e2e_aggregate":
            key = (c["system"], c["card"], c.get("power_limit_w"), c.get("section"))
            sets.setdefault(key, {})[c["streams"]] = c["value"]
    out = []
    for run in runs:
        steps = run.reported
        one = next((s["e2e_aggregate_tok_s"] for s in steps if s["streams"] == 1), None)
        table = []
        for s in steps:
            agg, n = s.get("e2e_aggregate_tok_s"), s["streams"]
            lens = s.get("output_len")
            table.append([
                str(n), str(s["requests"]), md.num(agg), md.num(agg / n if agg else None),
                md.num(s.get("per_request_span_tok_s")),
                md.num(measured_over(agg, one), "{:.2f}×"),
                f"{s.get('timeline_output_tokens')} "
                f"({s['requests']} × {lens})"])
        out += [f"Closed-loop clients, {run.name} (each client sends its requests one after "
                "another; aggregate = all output tokens / wall time, end to end; per request "
                "= tokens / (last chunk − first chunk), mean over requests, TTFT left out):",
                "", md.table(["Clients (streams)", "Requests", "Aggregate, tok/s",
                            "Per client (aggregate / clients), tok/s",
                            "Per request, tok/s", "Scaling (C / 1 client)",
                            "Output tokens"], table), ""]
        out += [published_scaling(k, v) for k, v in sets.items()]
        out += ["",
                "With dummy weights no request stops early: every request runs to its "
                f"{proto.output_len}-token cap, so these are the published protocol's "
                "longest answers; the published figures averaged answers of their own "
                "lengths, which end and refill sooner.", ""]
    return "\n".join(out)


def published_scaling(key: tuple[Any, ...], by_streams: dict[int, float]) -> str:
    """One line per published set: its aggregate per client count and the scaling C / 1."""
    system, card, watts, section = key
    one = by_streams.get(1)
    pts = ", ".join(f"{n} → {v:,.1f} tok/s"
                    + (f" ({v / one:.2f}× one client)" if one and n != 1 else "")
                    for n, v in sorted(by_streams.items()))
    where = f"{card}" + (f" at {watts:.0f} W" if watts else "")
    return (f"- Published, {system} on {where} ({section}): clients {pts}"
            + ("" if one else "; no one-client figure, so no scaling") + ".")


# ------------------------------------------------------------------ single stream


def single_stream_block(proto: Protocol, runs: list[Run]) -> str:
    """For a protocol measuring ``prefill_tok_s`` or ``bandwidth_fraction``: each one-stream
    step's decode and end-to-end tok/s, its share of the roofline's B = 1 ceiling at its
    context, and the prefill rate (prompt tokens / TTFT)."""
    if not {"prefill_tok_s", "bandwidth_fraction"} & set(proto.metrics):
        return ""
    out = []
    for run in runs:
        for s in run.reported:
            if s["streams"] != 1:
                continue
            if row_is_held_prefill(s):
                out.append(
                    f"- {run.name}, 1 stream, {s.get('requests', 0):,} prompts of "
                    f"{s['input_len']:,} tokens back to back, {s['output_len']} out each "
                    f"(prefill held, no decode to read): prefill "
                    f"{md.num(s.get('prefill_tok_s'), '{:,.0f}')} prompt tok/s (prompt tokens / "
                    "TTFT, median over requests).")
                continue
            dec = s.get("streams_x_1000_over_median_tpot_tok_s_per_stream")
            roof = s.get("roofline_per_stream_tok_s")
            out.append(
                f"- {run.name}, 1 stream, {s['input_len']:,} tokens of prompt "
                f"({s['context_tokens_per_stream']:,} of context at the end): decode "
                f"{md.num(dec)} tok/s (1000 / median TPOT, first token out), end to end "
                f"{md.num(s.get('e2e_aggregate_tok_s'))} tok/s (prefill in); "
                + (f"{dec / roof:.0%} of the roofline's B = 1 ceiling of {roof:,.1f} tok/s at "
                   "this context (η = 1)" if dec and roof else "no roofline")
                + f"; prefill {md.num(s.get('prefill_tok_s'), '{:,.0f}')} prompt tok/s "
                "(prompt tokens / TTFT, median over requests).")
    return ("One stream: the roofline's B = 1 points.\n\n" + "\n".join(out) + "\n"
            if out else "")
