"""The article's "Update" section as Markdown: tables of measured runs set against the
claims they replay and the roofline, with each run's provenance.

Every tok/s printed says how many streams and how they relate, the per-stream speed, the
context per stream, and whether it is decode (which excludes each request's first token
and prefill) or end to end (which includes prefill, ramp and tail).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from claimcheck.core import definitions as d
from claimcheck.core.definitions import row_is_held_prefill
from claimcheck.core.errors import InputError
from claimcheck.core.frames import flag, number
from claimcheck.core.geometry import Geometry
from claimcheck.core.metrics import METRICS
from claimcheck.core.protocols import Protocol, relation_words
from claimcheck.report import context_cost as CC
from claimcheck.report import findings as F
from claimcheck.report import mdtext as md
from claimcheck.report import sections
from claimcheck.report import stepframe as SF
from claimcheck.report.record import Run, median_step, reported_steps, step_context
from claimcheck.report.tables import measured_over


@dataclass(frozen=True)
class Column:
    """How one metric of a protocol's ``metrics`` list is shown: the step-row key it reads,
    its header (with its unit and definition) and its number format."""

    key: str
    header: str
    fmt: str
    speed: str | None = None
    """What the value is: "aggregate" (tok/s summed over the streams), "per_stream" (one
    stream's tok/s), "prefill" (prompt tok/s) or None (not a speed: ms, W, shares)."""
    streams_times_tpot: bool = False
    """Streams x 1000 / a TPOT: an aggregate only where every stream runs at once."""


# Every metric name a protocol may list (config/protocols.yaml ``metrics``). Claim metric
# definitions (core/metrics.py) that a run can measure map to the step value of the same
# definition; the others are per-step quantities.
REPORT_METRICS: dict[str, Column] = {
    "e2e_aggregate": Column("e2e_output_tok_s", "End to end, tok/s (prefill, ramp, tail in)",
                            "{:,.1f}", "aggregate"),
    "streams_x_1000_over_median_tpot": Column(
        "aggregate_tpot_tok_s", "Streams × 1000 / median TPOT, tok/s (decode)", "{:,.1f}",
        "aggregate", True),
    "engine_log_steady": Column("engine_log_steady_tok_s",
                                "Engine log, all running, no prefill, tok/s", "{:,.1f}",
                                "aggregate"),
    "median_tpot_ms": Column("median_tpot_ms", "Median TPOT", "{:.2f} ms"),
    "per_stream_tok_s": Column("per_stream_tok_s", "Per stream, 1000 / median TPOT, tok/s",
                               "{:,.1f}", "per_stream"),
    "mean_ttft_ms": Column("mean_ttft_ms", "Mean TTFT", "{:,.0f} ms"),
    "median_ttft_ms": Column("median_ttft_ms", "Median TTFT", "{:,.0f} ms"),
    "mean_power_w": Column("telemetry_mean_power_w", "Mean power", "{:.0f} W"),
    "mean_tpot_ms": Column("mean_tpot_ms", "Mean TPOT", "{:.2f} ms"),
    "streams_x_1000_over_mean_tpot": Column(
        "aggregate_mean_tpot_tok_s", "Streams × 1000 / mean TPOT, tok/s (decode)", "{:,.1f}",
        "aggregate", True),
    # Read from the token timeline of each step (the step row's key, when it has one;
    # "not computed" otherwise).
    "decode_aggregate": Column("decode_aggregate_tok_s",
                               "Decode aggregate, tok/s (prefill and ramp out)", "{:,.1f}",
                               "aggregate"),
    "all_streams_decoding": Column("all_streams_decoding_tok_s",
                                   "All streams decoding, tok/s", "{:,.1f}", "aggregate"),
    "fastest_second": Column("fastest_second_tok_s", "Fastest second, tok/s", "{:,.1f}",
                             "aggregate"),
    "per_request_tok_s": Column("per_request_tok_s",
                                "Per request decode, tok/s (median, first token out)",
                                "{:,.1f}", "per_stream"),
    "per_request_decode": Column("per_request_decode_tok_s",
                                 "Per request decode, (tokens − 1) / (last − first token), "
                                 "tok/s (median)", "{:,.1f}", "per_stream"),
    "prefill_tok_s": Column("prefill_tok_s", "Prefill, prompt tok/s", "{:,.0f}", "prefill"),
    "tok_s_per_measured_w": Column("tok_s_per_measured_w",
                                   "Output tokens per measured J (board power over the load "
                                   "window, else the NVML counter), tok/s per W",
                                   "{:.2f}"),
    "lanes_stats": Column("lanes_stats", "Lanes", "{}"),
    "bandwidth_fraction": Column("bandwidth_fraction",
                                 "Per stream ÷ roofline per stream (η = 1, share of the "
                                 "bandwidth ceiling)", "{:.0%}"),
}


def metric_columns(proto: Protocol, source: str) -> list[Column]:
    """The columns of a protocol's table, in the order of its ``metrics`` list; a name the
    report does not know is refused, naming the protocol's key."""
    unknown = [m for m in proto.metrics if m not in REPORT_METRICS]
    if unknown:
        raise InputError(source, f"unknown metric(s) {unknown}; known: "
                         f"{', '.join(sorted(REPORT_METRICS))}",
                         key=f"protocols.{proto.name}.metrics")
    return [REPORT_METRICS[m] for m in proto.metrics]


def provenance_line(run: Run) -> str:
    """One paragraph: card, power limit and measured draw, driver, engine, weights."""
    p = run.provenance
    gpu, tel, eng = p.gpu, p.telemetry, p.engine_config
    parts = [
        f"**{run.name}** ({p.status}): {gpu.name or p.card}",
        f"power limit {md.num(gpu.power_limit_enforced_w, '{:.0f}')} W enforced "
        f"(default {md.num(gpu.power_limit_default_w, '{:.0f}')} W), measured draw "
        f"{md.num(tel.mean_power_w, '{:.0f}')} W mean / "
        f"{md.num(tel.max_power_w, '{:.0f}')} W max at 1 Hz, mean SM clock "
        f"{md.num(tel.mean_sm_clock_mhz, '{:.0f}')} MHz, max "
        f"{md.num(tel.max_temp_c, '{:.0f}')} °C",
        f"driver {p.driver_version or '?'} (CUDA {p.cuda_driver_version or '?'})",
        f"vLLM {p.sw('vllm')} ({p.sw('vllm_commit')}), torch "
        f"{p.sw('torch')} (CUDA {p.sw('torch_cuda_runtime')}), FlashInfer "
        f"{p.sw('flashinfer')}",
        f"engine `{p.engine}`: weights {eng.weight_format}"
        f"{' (online ' + eng.quantization + ')' if eng.quantization else ''}, "
        f"KV {eng.kv_cache_dtype}, GDN state {eng.mamba_ssm_cache_dtype}, "
        f"prefix caching {eng.prefix_caching}, max-num-seqs {eng.max_num_seqs}"
        f"; engine reported {md.num(run.weights_gib, '{:.2f}')} GiB of weights and a KV "
        f"pool of {md.num(run.kv_pool_tokens, '{:,.0f}')} tokens",
        f"**{p.weights_label}**"
        + (" (random weights of the real geometry, synthetic tokenizer; speeds are the "
           "engine's, not a model's output quality)" if run.dummy else f" {p.weights}"),
        f"project commit {str(p.project_commit)[:10]}",
    ]
    if p.failure:
        parts.append(f"run failure: {p.failure}")
    return "; ".join(parts) + "."


def workload_sentence(proto: Protocol) -> str:
    """What the protocol runs, in words, from its fields alone (per-step lengths where the
    steps differ)."""
    ctx = [step_context(proto, i) for i in range(len(proto.steps))]
    streams = ", ".join(str(s.streams) for s in proto.steps)
    requests = ", ".join(str(s.requests) for s in proto.steps)
    levels = "level" if len(proto.steps) == 1 else "levels"
    repeats = ("once" if proto.repeats == 1 else f"{proto.repeats} times, reporting "
               + {"last": "the last pass", "median": "the median pass per level (by end "
                  "to end)"}.get(proto.report, "every pass"))
    lens = {(c["input_len"], c["output_len"]) for c in ctx}
    if len(lens) == 1:
        (i, o), = lens
        tokens = (f"{i} tokens in and {o} out"
                  f"{' (`--ignore-eos`)' if proto.ignore_eos else ''}, so {i + o} tokens of "
                  "context per stream at the end of each request")
    else:
        tokens = ("per step " + ", ".join(f"{c['input_len']} in / {c['output_len']} out "
                                         f"({c['context_tokens_per_stream']} tokens of "
                                         "context per stream)" for c in ctx)
                  + (" (`--ignore-eos`)" if proto.ignore_eos else ""))
    relation = relation_words(proto.kind)
    counts = {s.streams for s in proto.steps}
    streams = (plural(proto.steps[0].streams, "stream") if len(counts) == 1
               else f"{streams} streams")
    return (f"Workload: {streams} ({relation}, {len(proto.steps)} {levels}) "
            f"with {requests} requests; {tokens}; run {repeats}. Decode figures exclude each "
            "request's first token; end-to-end figures include prefill, ramp and tail.")


def _cell(s: dict[str, Any], c: Column) -> str:
    """One measured value, or why there is none."""
    if c.key not in s:
        return "not computed"
    if s[c.key] is None and c.key == "engine_log_steady_tok_s":
        return "n/a (no clean 10-s window)"
    per = s.get(f"{c.key}_per_stream")
    if per is not None and s[c.key] is not None and per != s[c.key]:
        return f"{md.num(s[c.key], c.fmt)} ({per:,.1f} per stream)"
    return md.num(s[c.key], c.fmt)


def _step_label(run: Run, s: dict[str, Any], kept: bool, many: bool) -> str:
    p = run.provenance
    return (f"{p.card}, {p.engine}, {p.weights_label}, pass {s['repeat']}"
            + (" (kept)" if kept and many else ""))


def protocol_table(proto: Protocol, runs: list[Run], rows: dict[tuple[str, int, int], dict],
                   claims: list[dict[str, Any]], source: str) -> str:
    """One table for a protocol: its replayed claims first (each in the column of its own
    metric), then every step of every run; failed steps say so with their reason."""
    cols = metric_columns(proto, source)
    header = (["Run", "Streams", "Requests"] + [c.header for c in cols]
              + ["Roofline (η = 1), tok/s", "Streams × 1000 / median TPOT ÷ roofline",
                 "Completed"])
    out: list[list[str]] = []
    by_key = {REPORT_METRICS[m].key: i for i, m in enumerate(proto.metrics)}
    per_stream = by_key.get("per_stream_tok_s")
    for c in _replayed(proto, claims):
        col = REPORT_METRICS.get(c["metric"])
        if col is None or col.key not in by_key:
            continue
        cells = ["" for _ in header]
        watts = f", {c['power_limit_w']:.0f} W" if c["power_limit_w"] else ""
        cells[0] = f"{c['system']} ({c['id']}), {c['card']}{watts}"
        cells[1] = str(c["streams"])
        cells[3 + by_key[col.key]] = md.num(c["value"], "{:,.0f}")
        if per_stream is not None:
            cells[3 + per_stream] = md.num(c["per_stream_tok_s"])
        out.append(cells)
    for run in runs:
        kept = {id(s) for s in reported_steps(run)}
        for s in run.steps:
            cells = [_step_label(run, s, id(s) in kept, len(run.steps) > len(proto.steps)),
                     str(s["streams"]), str(s["requests"])]
            if s["status"] != "complete":
                cells += [f"**{s['status']}**: {s['reason'] or 'no reason recorded'}"]
                cells += ["" for _ in range(len(header) - len(cells))]
                out.append(cells)
                continue
            r = rows.get((run.name, s["step"], s["repeat"]), {})
            rt, agg = r.get("roofline_tok_s"), s.get("aggregate_tpot_tok_s")
            cells += [_cell({**r, **s}, c) for c in cols]
            cells += [md.num(rt, "{:,.0f}"), md.num(agg / rt if rt and agg else None, "{:.0%}"),
                      f"{s.get('completed')}/{s.get('requests')}"]
            out.append(cells)
    return md.table(header, out)


def assumed_reasons(c: dict[str, Any]) -> dict[str, str]:
    """Column -> reason for each value of a tidy claim row that the project assumed (the
    row's ``assumed`` text, ``column=value; reason`` joined by `` | ``)."""
    fields = set(filter(None, str(c.get("assumed_fields") or "").split(",")))
    out = {}
    for part in str(c.get("assumed") or "").split(" | "):
        col, _, rest = part.partition("=")
        if col.strip() in fields:
            out[col.strip()] = rest.partition("; ")[2].strip() or "no reason given"
    return {**{f: "no reason given" for f in fields}, **out}


def claim_head(c: dict[str, Any]) -> str:
    """A claim as it must be printed: value, definition, streams and how they relate (and how
    many ran at once, when the registry says), per-stream speed, context per stream, card,
    power limit and weights; a value the project assumed says so, with its reason."""
    why = assumed_reasons(c)

    def a(col: str) -> str:
        return f" (assumed: {why[col]})" if col in why else ""

    relation = c["stream_relation"].replace("_", " ")
    streams = ("1 stream" if c["streams"] == 1 else f"{c['streams']} {relation}") + a("streams")
    running = c.get("streams_running")
    if running and running != c["streams"]:
        streams += f", {running:g} running at once{a('streams_running')}"
    where = (f"{c['card']}" + (f" at {c['power_limit_w']:.0f} W{a('power_limit_w')}"
                               if c["power_limit_w"] else "")
             + (f", {c['quantization']} weights" if c["quantization"]
                else ", weights not stated") + a("quantization"))
    return (f"- **{c['id']}**: {c['value']:,.0f} tok/s ({METRICS[c['metric']].label}; "
            f"{streams}, {c['per_stream_tok_s']:.1f} tok/s per stream, "
            + (f"{c['context_tokens']:,} tokens of context per stream" if c["context_tokens"]
               else "context per stream not stated") + f"{a('context_tokens')}; "
            f"{where})")


def compare_sentence(c: dict[str, Any], measured: list[tuple[Run, dict[str, Any]]]) -> str:
    """One sentence: how a claim compares with the measured steps at its stream count (one
    per run of the protocol), by the claim's own definition. Only completed steps come
    here (see :func:`claimcheck.report.record.reported_steps`)."""
    col = REPORT_METRICS.get(c["metric"])
    label = METRICS[c["metric"]].label
    head = claim_head(c)
    parts, missing = [], []
    for run, m in measured:
        p = run.provenance
        got = m.get(col.key) if col else None
        name = f"{p.card} {p.engine}"
        if got is None:
            missing.append(f"{name} ({m.get('engine_log_steady_lines', 0)} qualifying "
                           "10-s log windows)" if col and col.key == "engine_log_steady_tok_s"
                           else name)
            continue
        per = m.get(f"{col.key}_per_stream") if col else None
        if per is None:  # the same definition's per-stream reading
            per = got / m["streams"] if METRICS[c["metric"]].scope == "aggregate" else got
        parts.append(f"{got:,.0f} tok/s on {name} ({per:.1f} per stream)")
    text = head
    if parts:
        text += f" against, by the same definition ({label}): " + "; ".join(parts) + "."
    if missing:
        text += f" No {label} figure from " + ", ".join(missing) + "."
    weights = {r.provenance.weights_label for r, _ in measured}
    return text + (f" Other card and {', '.join(sorted(weights))}: this compares the "
                   "protocol's numbers, not the recipe.")


def _replayed(proto: Protocol, claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ids = set(proto.source_claims)
    return [c for c in claims if c["id"] in ids]


def _step_rows(steps: list[dict[str, Any]]) -> dict[tuple[str, int, int], dict[str, Any]]:
    return {(s["run"], s["step"], s["repeat"]): s for s in steps}


def protocol_section(proto: Protocol, runs: list[Run], steps: list[dict[str, Any]],
                     claims: list[dict[str, Any]], figures: dict[str, str],
                     level: str = "###", others: list[Run] | None = None,
                     nominal_w: dict[str, float] | None = None,
                     description: str | None = None) -> str:
    """The section of one protocol: what it runs, its table, the blocks its data asks for
    (gate, all-streams decode, lanes, closed loop, one stream; see
    :mod:`claimcheck.report.sections`), each run's figure. ``others``: every run of the
    card (for same-shape comparisons); ``nominal_w``: card -> rated board power, W."""
    rows = _step_rows(steps)
    out = [f"{level} Protocol `{proto.name}`", "", description or proto.description, "",
           workload_sentence(proto), "",
           protocol_table(proto, runs, rows, claims,
                          str(runs[0].path / "provenance.json")), ""]
    blocks = [sections.gate_block(proto, runs, rows, claims, nominal_w),
              sections.admit_block(proto, runs, rows, others or runs),
              sections.lanes_block(proto, runs, claims),
              sections.closed_loop_block(proto, runs, claims),
              sections.single_stream_block(proto, runs, rows)]
    out += [b for b in blocks if b]
    for r in runs:
        if f"measured-{r.name}" in figures:
            out.append(f"![{r.name}]({figures[f'measured-{r.name}']})")
    return "\n".join(out) + "\n"


def render_run_md(run: Run, steps: list[dict[str, Any]], claims: list[dict[str, Any]]) -> str:
    """Markdown for one run: its protocol's section and its provenance."""
    return (f"### {run.name}\n\n" + protocol_section(run.protocol, [run], steps, claims, {},
                                                      level="####")
            + "\n" + provenance_line(run) + "\n")


def render_update(runs: list[Run], steps: list[dict[str, Any]], claims: list[dict[str, Any]],
                  card: str, figures: dict[str, str],
                  protocols: list[str] | None = None, model: str | None = None,
                  geometry: Geometry | None = None,
                  nominal_w: dict[str, float] | None = None,
                  descriptions: dict[str, str] | None = None) -> str:
    """The whole Update section for the runs of one card: a section per protocol that has
    runs (in name order), the protocols named in ``protocols`` that have none, one sentence
    per replayed claim, provenance and figure links. ``model`` and ``geometry`` describe the
    served model in the dummy-weights note."""
    runs = [r for r in runs if r.provenance.card == card]
    if not runs:
        return f"## Update\n\nNo recorded runs for {card} yet.\n"
    out = [update_title(runs, card), "", *dummy_note(runs, model, geometry)]
    out += ["Every run below was made by `claimcheck measure` with the exact commands kept "
            "in its `provenance.json` under `data/raw/runs/`. Published rows come first in "
            "each table, in the column of their own metric definition; the roofline uses "
            "the weight GiB the engine reported, the engine's state and KV dtypes, the "
            "protocol's context per stream and the card's datasheet bandwidth at η = 1.", ""]
    by_proto: dict[str, list[Run]] = {}
    rank = body_order(runs, steps)
    for r in sorted(runs, key=lambda r: (rank.get(r.protocol.name, len(rank)),
                                         r.protocol.name, r.name)):
        by_proto.setdefault(r.protocol.name, []).append(r)
    for name, rs in by_proto.items():
        out.append(protocol_section(rs[-1].protocol, rs, steps, claims, figures,
                                    others=runs, nominal_w=nominal_w,
                                    description=(descriptions or {}).get(name)))
    not_run = [p for p in protocols or [] if p not in by_proto]
    if not_run:
        out += ["### Not run yet", "",
                "Protocols in `config/protocols.yaml` with no recorded run on this card: "
                + ", ".join(f"`{p}`" for p in not_run) + ".", ""]
    out += ["### Measured beside each replayed claim", "",
            "By the claim's own definition, on this card; what each claim means for its own "
            "card is its verdict (the Verdicts section), not a ratio across cards.", ""]
    for rs in by_proto.values():
        for c in _replayed(rs[-1].protocol, claims):
            ms = [(r, s) for r in rs for s in reported_steps(r)
                  if s["streams"] == c["streams"]]
            if ms:
                out.append(compare_sentence(c, ms))
            else:
                out.append(claim_head(c) + f". No step of {', '.join(r.name for r in rs)} "
                           f"ran at {c['streams']} streams: not compared.")
    out += ["", "### Provenance", ""]
    out += [f"- {provenance_line(r)}" for r in runs]
    if figures:
        out += ["", "### Figures", ""]
        out += [f"- [{name}]({path})" for name, path in sorted(figures.items())]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ the printable body
# figures/update.md is the body an article can print (short prose, one table per protocol
# of at most BODY_COLUMNS columns); everything else goes to the appendix (render_update).

BODY_COLUMNS = 8
BODY_METRICS = 3  # the headline and at most two more speeds per protocol table


def plural(n: float, word: str) -> str:
    """'1 stream', '8 streams' (a count and its noun, agreeing)."""
    return f"{n:,.0f} {word}" if n == 1 else f"{n:,.0f} {word}s"


def headline_metric(proto: Protocol) -> str:
    """The one metric a protocol answers with: the first entry of its ``metrics`` that is a
    decode or end-to-end speed (aggregate, tok/s summed over the streams); a per-stream
    speed counts only when every step runs one stream (there it is the aggregate). Every
    table, paragraph and figure of the protocol headlines this one (one number, one road).
    A protocol with no such metric is refused, naming its key."""
    one = all(st.streams == 1 for st in proto.steps)
    for m in proto.metrics:
        col = REPORT_METRICS.get(m)
        if col and (col.speed == "aggregate" or (one and col.speed == "per_stream")):
            return m
    raise InputError("config/protocols.yaml", "no decode or end-to-end speed among "
                     f"{list(proto.metrics)}: nothing to headline",
                     key=f"protocols.{proto.name}.metrics")


def running_at_once(run: Run, s: dict[str, Any]) -> int:
    """Streams that ran at once in a step: its streams, or the server's max-num-seqs when
    the step asked for more (the rest queue)."""
    return d.running_at_once(s["streams"], run.provenance.engine_config.max_num_seqs)


def is_queued(run: Run, s: dict[str, Any]) -> bool:
    """Whether a step asked for more streams than the server runs at once."""
    return d.is_queued(s["streams"], run.provenance.engine_config.max_num_seqs)


def per_stream(run: Run, s: dict[str, Any], col: Column) -> float | None:
    """One stream's speed under a column's definition: the record's own per-stream reading
    where it has one, else the aggregate over the streams that ran at once (tok/s)."""
    v = s.get(col.key)
    if v is None or col.speed != "aggregate":
        return v if col.speed == "per_stream" else None
    own = s.get(f"{col.key}_per_stream")
    return own if own is not None else v / running_at_once(run, s)


def roofline_share(run: Run, s: dict[str, Any], metric: str) -> float | None:
    """A step's figure by ``metric`` over the plain roofline (eta = 1) at its streams and
    context: aggregate over aggregate, or per stream over per stream. None for a queued
    step (the roofline at the streams asked is not the load that ran) or a missing value."""
    col = REPORT_METRICS[metric]
    v = s.get(col.key)
    if v is None or is_queued(run, s):
        return None
    roof = s.get("roofline_per_stream_tok_s" if col.speed == "per_stream"
                 else "roofline_tok_s")
    return measured_over(v, roof)


def body_columns(proto: Protocol) -> list[str]:
    """The metrics of a protocol's body table: its headline, then at most two more speeds
    from its ``metrics``, in order."""
    head = headline_metric(proto)
    rest = [m for m in proto.metrics if m != head and REPORT_METRICS.get(m)
            and REPORT_METRICS[m].speed]
    return [head] + rest[:BODY_METRICS - 1]


def run_label(run: Run) -> str:
    """A run as a table row names it: its directory name, and dummy weights where its
    provenance says so."""
    return run.name + (", dummy weights" if run.dummy else "")


def _streams_cell(run: Run, s: dict[str, Any]) -> str:
    n = s["streams"]
    if row_is_held_prefill(s):
        return (f"{n} (held prefill: {s.get('requests')} prompts of "
                f"{s.get('input_len') or 0:,} tokens, {s.get('output_len')} out each)")
    if is_queued(run, s):
        return f"{n} (queued: {running_at_once(run, s)} run at once)"
    return str(n)


def _body_cell(run: Run, s: dict[str, Any], col: Column) -> str:
    v = s.get(col.key)
    if v is None:
        return ("n/a (held prefill)" if row_is_held_prefill(s)
                else "n/a")
    if col.streams_times_tpot and is_queued(run, s):
        return "n/a (queued)"
    text = md.num(v, col.fmt)
    per = per_stream(run, s, col)
    if col.speed == "aggregate" and per is not None:
        text += f" ({per:,.1f})"
    return text


def metric_name(col: Column) -> str:
    """A column's definition without its unit (its header less ", tok/s")."""
    return col.header.replace(", tok/s", "")


def in_prose(col: Column) -> str:
    """A column's definition as a sentence says it (first letter lower case)."""
    name = metric_name(col)
    return name[:1].lower() + name[1:]


CODE_WORD = re.compile(r"(?<![`\w])([\w./-]*[A-Za-z0-9]_[\w./-]*\w)(?![`\w])")


def plain_words(text: str) -> str:
    """Data text (a protocol's description) for prose: identifiers with underscores set
    as code, so prose never reads a snake_case name as a word."""
    return CODE_WORD.sub(r"`\1`", text)


def body_header(col: Column) -> str:
    """A body column's header: its definition, its unit, and where per-stream speeds
    sit."""
    if col.speed == "aggregate":
        return f"{metric_name(col)}, tok/s summed (per stream)"
    return col.header


def body_table(proto: Protocol, runs: list[Run], rows: dict[tuple[str, int, int], dict]
               ) -> str:
    """The protocol's one body table: a row per reported step of each run (run, streams,
    the headline and up to two more speeds with their per-stream readings, share of the
    plain roofline by the headline); held-prefill and queued levels said in the streams
    cell. At most :data:`BODY_COLUMNS` columns."""
    metrics = body_columns(proto)
    cols = [REPORT_METRICS[m] for m in metrics]
    header = (["Run", "Streams"] + [body_header(c) for c in cols]
              + [f"{metric_name(cols[0])} ÷ plain roofline (η = 1)"])
    out = []
    for run in runs:
        for s, n in body_steps(run):
            m = {**rows.get((run.name, s["step"], s["repeat"]), {}), **s}
            share = roofline_share(run, m, metrics[0])
            streams = _streams_cell(run, m) + (f" (median of {n} repeats)" if n > 1 else "")
            out.append([run_label(run), streams]
                       + [_body_cell(run, m, c) for c in cols]
                       + [md.num(share, "{:.0%}") if share is not None else
                          ("n/a (queued)" if is_queued(run, m) else "n/a")])
    assert len(header) <= BODY_COLUMNS
    return md.table(header, out)


def body_steps(run: Run) -> list[tuple[dict[str, Any], int]]:
    """The run's reported steps as the body shows them: one per level, the repeat whose
    end-to-end aggregate is the median where a level reports several (every repeat is in
    the appendix), with how many repeats it stands for."""
    by_level: dict[int, list[dict[str, Any]]] = {}
    for s in reported_steps(run):
        by_level.setdefault(s["step"], []).append(s)
    return [(median_step(v), len(v)) for _, v in sorted(by_level.items())]


def failed_steps_line(runs: list[Run]) -> str:
    """The steps a body table leaves out because they did not complete, each with its
    reason (nothing measured is dropped silently)."""
    bad = [(r, s) for r in runs for s in r.steps if s["status"] != "complete"]
    if not bad:
        return ""
    return "Not in the table: " + "; ".join(
        f"{r.name} step {s['step'] + 1} ({plural(s['streams'], 'stream')}, "
        f"{s.get('requests')} requests of {s.get('input_len') or 0:,} tokens) "
        f"{s['status']}: {s.get('reason') or 'no reason recorded'} (the run is kept as "
        f"recorded, marked {r.provenance.status})" for r, s in bad) + "."


def headline_sentence(proto: Protocol, run: Run, rows: dict[tuple[str, int, int], dict]
                      ) -> str | None:
    """A run's headline at its most streams (not queued, not held prefill): the protocol's
    headline figure, its per-stream speed and its share of the plain roofline, the run
    named."""
    metric = headline_metric(proto)
    col = REPORT_METRICS[metric]
    cands = [{**rows.get((run.name, s["step"], s["repeat"]), {}), **s}
             for s in reported_steps(run)]
    cands = [s for s in cands if s.get(col.key) is not None and not is_queued(run, s)
             and not row_is_held_prefill(s)]
    if not cands:
        return None
    s = max(cands, key=lambda s: (s["streams"], s.get("context_tokens_per_stream") or 0))
    v, per, share = s[col.key], per_stream(run, s, col), roofline_share(run, s, metric)
    n = s["streams"]
    text = (f"on {run.provenance.engine} ({run_label(run)}), {plural(n, 'stream')} of "
            f"{s.get('context_tokens_per_stream') or 0:,} tokens of context"
            f"{' each' if n != 1 else ''}: {md.num(v, col.fmt)} tok/s")
    if col.speed == "aggregate" and per is not None:
        text += f" summed, {per:,.1f} per stream"
    if share is not None:
        text += f", {share:.0%} of the plain roofline"
    return text


def replay_tally(proto: Protocol, verdicts: list[dict[str, Any]]) -> str:
    """How the published figures a protocol replays came out, by verdict kind."""
    ids = set(proto.source_claims)
    kinds = Counter(v["verdict"] for v in verdicts if v["id"] in ids)
    if not ids:
        return "It replays no published figure."
    if not kinds:
        return f"It replays {plural(len(ids), 'published figure')}; none has a verdict yet."
    parts = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
    return (f"It replays {plural(len(ids), 'published figure')}: {parts} (each with its "
            "numbers in the appendix).")


def protocol_body(proto: Protocol, runs: list[Run], rows: dict[tuple[str, int, int], dict],
                  verdicts: list[dict[str, Any]], figures: dict[str, str]) -> str:
    """A protocol in the body: what it runs, its headline per engine at its most streams,
    how its replayed figures came out, its one table and its runs' figures."""
    col = REPORT_METRICS[headline_metric(proto)]
    heads = [h for h in (headline_sentence(proto, r, rows) for r in runs) if h]
    para = [plain_words(proto.description)]
    if heads:
        para.append(f"It answers with {in_prose(col)}: " + "; ".join(heads) + ".")
    para.append(replay_tally(proto, verdicts))
    out = [f"### {proto.name}", "", " ".join(para), "", body_table(proto, runs, rows), ""]
    bad = failed_steps_line(runs)
    if bad:
        out += [bad, ""]
    out += [f"![{r.name}]({figures[f'measured-{r.name}']})" for r in runs
            if f"measured-{r.name}" in figures]
    return "\n".join(out) + "\n"


def provenance_paragraph(runs: list[Run]) -> str:
    """All runs in one paragraph: how many, on which cards and power limits, engine
    builds, drivers, weights (dummy from each run's provenance) and where the commands
    are kept; per-run detail is the appendix's."""
    def joined(xs: Iterable[str]) -> str:
        return ", ".join(sorted(set(xs)))

    p = [r.provenance for r in runs]
    dummy = [r for r in runs if r.dummy]
    limits = joined(f"{x.gpu.power_limit_enforced_w:.0f} W" for x in p
                    if x.gpu.power_limit_enforced_w)
    weights = ("all with dummy weights (random weights of the real geometry, "
               "`--load-format dummy`)" if len(dummy) == len(runs) else
               f"{len(dummy)} with dummy weights" if dummy else "with the published weights")
    return (f"{plural(len(runs), 'run')} on {joined(x.gpu.name or x.card for x in p)} "
            f"(power limit {limits or 'not recorded'} enforced), "
            f"{joined(x.started_utc[:10] for x in p)}; vLLM {joined(x.sw('vllm') for x in p)}, "
            f"torch {joined(x.sw('torch') for x in p)}, driver "
            f"{joined(x.driver_version or 'not recorded' for x in p)}; engines "
            f"{joined(x.engine for x in p)}; {weights}. Each run's exact commands, server "
            "log and 1-Hz telemetry are kept under `data/raw/runs/`; the appendix gives "
            "each run's provenance line.")


def update_title(runs: list[Run], card: str) -> str:
    """The section's heading: dates, card, and dummy weights where any run used them."""
    first = runs[0].provenance
    days = sorted({r.provenance.started_utc[:10] for r in runs})
    return (f"## Update, {', '.join(days)}: the published protocols on one "
            f"{first.gpu.name or card}" + (" (dummy weights)" if any(r.dummy for r in runs)
                                          else ""))


def dummy_note(runs: list[Run], model: str | None, geometry: Geometry | None) -> list[str]:
    """The dummy-weights note (a quote block and a blank line), or nothing when no run
    used dummy weights (each run's provenance says)."""
    if not any(r.dummy for r in runs):
        return []
    return ["> **Dummy weights.** These runs serve the real "
            f"{model or 'model'} geometry (`config.json`"
            + (f", {geometry.num_layers} layers, {geometry.total_params / 1e9:.2f} B "
               "parameters" if geometry is not None else "")
            + ") with random weights "
            "(`--load-format dummy`) and a synthetic tokenizer, because no checkpoint "
            "could be downloaded on the GPU host. Speed depends on the geometry, the "
            "dtypes and the engine, not on the weights' values, but these are not runs "
            "of the published checkpoints.", ""]


def body_order(runs: list[Run], steps: list[dict[str, Any]]) -> dict[str, int]:
    """Protocol name -> its place in the body: the order in which the findings first read
    a run of it (the appendix follows the body's order)."""
    names = {r.name for r in runs}
    proto = {r.name: r.protocol.name for r in runs}
    found = F.all_findings(SF.step_frame(pd.DataFrame([s for s in steps if s["run"] in names]),
                                        SF.engine_rows(runs)))
    order: dict[str, int] = {}
    for x in found:
        for row in x.rows:
            for run in str(row.get("runs") or row.get("run") or "").split(", "):
                if run in proto:
                    order.setdefault(proto[run], len(order))
    return order


def engine_words(run: Run) -> str:
    """An engine in words: weights, KV and state dtypes, slots and prefix caching, from the
    run's provenance and engine inputs (never the engine's config name)."""
    ec, ei = run.provenance.engine_config, run.engine_inputs
    fmt = ec.weight_format.upper()
    how = " (vLLM's online quantization of the BF16 weights)" if ec.quantization else ""
    kv = (ei.kv_dtype if ei else ec.kv_cache_dtype).upper()
    state = (ei.state_dtype if ei else str(ec.mamba_ssm_cache_dtype)).upper()
    article = "an" if kv[:1] in "AEFHILMNORSX" else "a"  # as spoken: an FP8, a BF16
    return (f"{fmt} weights{how} with {article} {kv} KV cache and {state} recurrent state, "
            f"{ec.max_num_seqs} slots"
            + (", prefix caching on" if ec.prefix_caching else ""))


def stack_paragraph(runs: list[Run]) -> str:
    """The stack in a few sentences: card and power limit, engine version, each engine in
    words, and the weights."""
    def joined(xs: Iterable[str]) -> str:
        xs = sorted(set(xs))
        return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]

    p = [r.provenance for r in runs]
    limits = joined(f"{x.gpu.power_limit_enforced_w:.0f} W" for x in p
                    if x.gpu.power_limit_enforced_w)
    draw = [x.telemetry.mean_power_w for x in p if x.telemetry.mean_power_w]
    engines: dict[str, list[str]] = {}
    for r in runs:
        engines.setdefault(engine_words(r), []).append(r.name)
    return (f"Every run is on one {joined(x.gpu.name or x.card for x in p)} at its "
            f"{limits} power limit (mean draw over a run {min(draw):.0f} to {max(draw):.0f} "
            f"W), driver {joined(x.driver_version or '?' for x in p)}, with vLLM "
            f"{joined(x.sw('vllm') for x in p)} and torch "
            f"{joined(str(x.sw('torch')).split('+')[0] for x in p)} (CUDA "
            f"{joined(str(x.sw('torch_cuda_runtime')) for x in p)}). "
            f"The engines served {len(engines)} configurations: "
            + "; ".join(sorted(engines)) + ". No run drafts tokens.")


def findings_paragraph(found: list[Any]) -> str:
    """The findings that hold, one sentence each, as one paragraph."""
    return " ".join(x.sentence for x in found if x.holds)


def _ps(v: float | None, n: float) -> str:
    """'summed (per stream)' with per stream = summed / n."""
    return "n/a (not measured)" if v is None or v != v else f"{v:,.1f} ({v / n:,.1f})"


def _caption(what: str, rows: list[dict[str, Any]], divisor: str) -> str:
    runs = sorted({r for x in rows for r in str(x.get("runs") or x.get("run", "")).split(", ")
                   if r})
    return (f"*{what} One row per level: the median of each column over the repeats and "
            f"runs of that level. {divisor} Runs: {', '.join(runs)} (dummy weights).*")


POWERS = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512}


def share_table(x: Any) -> str:
    """Decode against the bandwidth line per format, context and streams."""
    rows = [r for r in x.rows if r["streams"] in POWERS]
    d = SF.main_context(pd.DataFrame(x.rows))
    main = {(r["weight_format"], r["context_tokens_per_stream"]) for r in d.to_dict("records")}
    longest = SF.long_context(pd.DataFrame(x.rows))
    rows = [r for r in rows if (r["weight_format"], r["context_tokens_per_stream"]) in main
            or r["context_tokens_per_stream"] == longest]
    rows.sort(key=lambda r: (r["weight_format"], r["context_tokens_per_stream"], r["streams"]))
    body = [[SF.fmt_name(r["weight_format"]), f"{r['streams']:,.0f}",
             f"{r['context_tokens_per_stream']:,.0f}", _ps(r["decode"], r["streams"]),
             f"{r['roofline_tok_s']:,.0f}", f"{r['share']:.0%}"] for r in rows]
    return (md.table(["Weights", "Streams", "Context per stream, tokens",
                      "All streams decoding, tok/s summed (per stream)",
                      "Bandwidth line, tok/s", "η"], body) + "\n\n"
            + _caption("Decode while every stream decodes, against the bandwidth line, at "
                       "powers of two streams.", rows,
                       "Per stream = the sum divided by the streams decoding at once (all "
                       "of them)."))


def share_words(x: Any, buys: bool) -> str:
    """What the first table shows, from the bandwidth-share finding's rows (which holds
    only where the formats' η bands do not overlap): the format lower at every level, and,
    where the what-it-buys finding holds too, that this is why it buys less than its
    bytes."""
    top = {fm: g["share"].max() for fm, g in pd.DataFrame(x.rows).groupby("weight_format")}
    lo, hi = sorted(top, key=top.get)[0], sorted(top, key=top.get)[-1]
    return (f"{SF.fmt_name(lo)} holds a lower share of its line than {SF.fmt_name(hi)} at "
            "every level" + (", which is why it buys less than its bytes." if buys else "."))


def context_table(x: Any) -> str:
    """Decode while every stream decodes at each context of the context finding: one row
    per format and context, one column per stream count (tok/s summed, per stream, η)."""
    rows = x.rows
    streams = sorted({r["streams"] for r in rows})
    cell = {(r["weight_format"], r["context_tokens_per_stream"], r["streams"]): r
            for r in rows}
    keys = sorted({(r["weight_format"], r["context_tokens_per_stream"]) for r in rows})
    body = [[SF.fmt_name(fm), f"{t:,.0f}"]
            + [(f"{_ps(c['decode'], n)}, {c['share']:.0%}" if (c := cell.get((fm, t, n)))
                else "not measured") for n in streams] for fm, t in keys]
    return (md.table(["Weights", "Context per stream, tokens"]
                     + [f"{n:,.0f} streams, tok/s summed (per stream), η" for n in streams],
                     body)
            + "\n\n" + _caption("All streams decoding at each context per stream (prompt + "
                                  "output tokens at the end of the request) and stream "
                                  "count; one wave per step, every prompt prefilled before "
                                  "the decode that is read.", rows, "Per stream = the sum "
                                  "divided by the streams of the column."))


def context_words(x: Any) -> str:
    """What the context table shows, from its rows: per format, η at its shortest and its
    longest context at the most streams."""
    rows = x.rows
    top = max(r["streams"] for r in rows)
    parts = []
    for fm in sorted({r["weight_format"] for r in rows}):
        g = sorted((r for r in rows if r["weight_format"] == fm and r["streams"] == top),
                   key=lambda r: r["context_tokens_per_stream"])
        if g:
            parts.append(f"{SF.fmt_name(fm)} {g[0]['share']:.0%} of its line at "
                         f"{g[0]['context_tokens_per_stream']:,.0f} tokens and "
                         f"{g[-1]['share']:.0%} at {g[-1]['context_tokens_per_stream']:,.0f}")
    return f"At {top:,.0f} streams: " + "; ".join(parts) + "."


def bytes_table(x: Any) -> str:
    """The bytes one step moves and the step measured, per level of the step finding."""
    rows = [r for r in x.rows if r["streams"] in POWERS]
    body = [[f"{r['streams']:,.0f}", f"{r['weights_gb']:.1f}", f"{r['state_gb']:.1f}",
             f"{r['kv_gb']:.1f}", f"{r['step_ms']:.1f}", f"{r['share']:.0%}"] for r in rows]
    return (md.table(["Streams", "Weights, GB", "State read and written, GB", "KV, GB",
                      "Step, ms (streams × 1000 / all streams decoding)", "η"], body)
            + "\n\n" + _caption(f"What one {SF.fmt_name(rows[0]['weight_format'])} step "
                                  f"moves at {rows[0]['context_tokens_per_stream']:,.0f} "
                                  "tokens of context per stream (from the geometry) and how "
                                  "long it takes.", rows,
                                  "The step divides the streams decoding at once by their "
                                  "summed decode speed."))


def long_table(x: Any) -> str:
    """Long prompts with a second wave: all streams decoding, mean TPOT, end to end."""
    rows = sorted(x.rows, key=lambda r: (r["weight_format"], r["streams"]))
    body = [[SF.fmt_name(r["weight_format"]), f"{r['streams']:,.0f}",
             _ps(r["decode"], r["streams"]),
             _ps(r["aggregate_mean_tpot_tok_s"], r["streams"]),
             _ps(r["e2e_output_tok_s"], r["streams"]), f"{r['share']:.0%}"] for r in rows]
    return (md.table(["Weights", "Streams", "All streams decoding, tok/s summed (per stream)",
                      "Streams × 1000 / mean TPOT (per stream)",
                      "End to end (per stream)", "η, all streams decoding"], body)
            + "\n\n" + _caption(f"{rows[0]['input_len']:,.0f} tokens in and "
                                  f"{rows[0]['output_len']:,.0f} out, {rows[0]['waves']:.0f} "
                                  "requests per stream (a later wave's prefills land on the "
                                  "decode of the one before); end to end includes prefill, "
                                  "ramp and tail.", rows,
                                  "Every per-stream figure divides by the streams of the "
                                  "row."))


def wave_table(x: Any) -> str:
    """One wave against several, end to end."""
    rows = sorted(x.rows, key=lambda r: (r["long"], r["weight_format"], r["streams"]))
    body = [[SF.fmt_name(r["weight_format"]), f"{r['input_len']:,.0f}", f"{r['streams']:,.0f}",
             _ps(r["one"], r["streams"]), _ps(r["many"], r["streams"]) +
             f", {r['waves']:.0f} waves", f"{r['change']:+.1%}"] for r in rows]
    return (md.table(["Weights", "Prompt, tokens", "Streams", "One wave, end to end, tok/s "
                      "(per stream)", "Several waves, end to end", "Change"], body)
            + "\n\n*End to end = all output tokens / wall time, prefill, ramp and tail in; "
            "one row per level, the median over repeats and runs of each side. Per stream "
            "= end to end / the streams of the row. The one-wave side is each level's "
            "one-wave steps with prompts within 30% of the other side's (dummy weights).*")


def model_sentences(rows: list[dict[str, Any]]) -> str:
    """The model in three sentences, from the model table: what it takes and which measured
    terms it has (those the table names a source for), how many steps it lands within 5%
    of, and its largest miss with the term that miss points at."""
    from claimcheck.report import verdicts_md
    if not rows:
        return "No model table yet."
    m = verdicts_md.model_summary(rows)
    terms = [words for col, words in (
        ("row_factor_source", "a decode step's measured time at each row count of one-wave "
                              "decode ladders"),
        ("admission_source", "a wave's requests reaching the scheduler one measured send "
                             "interval apart"),
        ("kv_source", "the KV cache read at its own rate, "
                      + ("the KV bytes a step adds over the time it adds from one context to "
                         "the next at the same streams"
                         if any(CC.LINES_MARK in str(r.get("kv_source") or "") for r in rows)
                         else "measured while every stream of a one-wave long-prompt step "
                              "decodes")))
        if any(r.get(col) for r in rows)]
    engines = sorted({str(r["engine"]) for r in rows if r.get("engine")})
    links = ", ".join(f"[{i + 1}](model-{e}.png)" for i, e in enumerate(engines))
    text = ("A step model takes the card's bandwidth from a one-stream decode and its "
            "compute from a held one-stream prefill"
            + (", adds " + plain_list(terms) if terms else "")
            + ", and replays each protocol's requests through the engine's scheduler. "
            f"Against the {m['steps']} steps none of its inputs came from, it lands within "
            f"5% of {m['both']} on both end to end and decode ({m['e2e']} on end to end "
            f"alone; figures {links}).")
    w = m["worst"]
    if w is not None:
        e2e, dec = float(w["e2e_error"]), number(w.get("decode_error"))
        which, err = ("end to end", e2e) if dec is None or abs(e2e) >= abs(dec) \
            else ("decode", dec)
        shape = (" prefill-only requests (2 tokens out)"
                 if flag(w.get("prefill_held")) else "")
        why = str(w.get("miss_term") or "")
        text += (f" Its largest miss is {err:+.1%} on {which}, at {w['streams']} streams of"
                 f"{shape or ' requests'}" + (f": {why}" if why else "") + ".")
    return text


plain_list = SF.and_list


def published_paragraph(verdicts: list[dict[str, Any]]) -> str:
    """The published figures against their own cards, in one paragraph."""
    from claimcheck.report import verdicts_md
    if not verdicts:
        return "No verdicts yet."
    counts = Counter(v["verdict"] for v in verdicts)
    head = (f"Set against the plain roofline of its own card and, where its source gave a "
            f"figure to calibrate on, against that source's own model, the "
            f"{len(verdicts)} published figures come out: "
            + "; ".join(f"{k}, {counts[k]}" for k in verdicts_md.kinds_in_order(verdicts))
            + ". No run here drafts tokens, so none of the H200 rows bears on the figures "
            "that need speculation.")
    return " ".join([head, verdicts_md.source_misses(verdicts),
                     verdicts_md.above_roofline(verdicts, 3)])


def body_title(found: list[Any], runs: list[Run]) -> str:
    """A title that states the main finding (the bandwidth-share finding's numbers)."""
    share = next((x for x in found if x.key == "bandwidth share" and x.holds), None)
    card = runs[0].provenance.gpu.name or runs[0].provenance.card
    days = sorted({r.provenance.started_utc[:10] for r in runs})
    if share is None:
        return f"## Update, {days[-1]}: the published protocols on one {card}"
    fm = sorted({k.split("_")[0] for k in share.numbers},
                key=lambda k: -share.numbers[f"{k}_max"])
    parts = []
    for i, k in enumerate(fm):
        n = [r["streams"] for r in share.rows if r["weight_format"] == k]
        parts.append(f"{SF.fmt_name(k)} decodes at {share.numbers[f'{k}_min']:.0%}–"
                     f"{share.numbers[f'{k}_max']:.0%} of {'its' if i == 0 else 'its own'} "
                     f"bandwidth line from {min(n):,.0f} to {max(n):,.0f} streams")
    return (f"## Update, {days[-1]}: on one {card} (dummy weights), "
            + " and ".join(parts))


def render_body(runs: list[Run], steps: list[dict[str, Any]], card: str,
                figures: dict[str, str], verdicts: list[dict[str, Any]],
                model_rows: list[dict[str, Any]], appendix: str,
                model: str | None = None, geometry: Geometry | None = None,
                verdict_figure: str | None = None,
                protocols: list[str] | None = None,
                log: list[str] | None = None,
                before_rows: list[dict[str, Any]] | None = None) -> str:
    """figures/update.md: the body an article can print, in the article's own form: a
    title stating the main finding, the dummy-weights box, the stack, the findings (each a
    sentence with its numbers, computed and checked by :mod:`claimcheck.report.findings`),
    at most five narrow tables each followed by what it shows, the published figures in
    one paragraph, the model in three sentences and, from ``before_rows`` (the
    predictions kept before a run, :mod:`claimcheck.report.beforehand`), how they fared,
    provenance in two lines. ``log`` gets one line per finding left out."""
    runs = [r for r in runs if r.provenance.card == card]
    if not runs:
        return f"## Update\n\nNo recorded runs for {card} yet.\n"
    names = {r.name for r in runs}
    frame = SF.step_frame(pd.DataFrame([s for s in steps if s["run"] in names]),
                         SF.engine_rows(runs))
    found = F.all_findings(frame)
    if log is not None:
        log += F.report(found)
    by = {x.key: x for x in found if x.holds}
    out = [body_title(found, runs), "", *dummy_note(runs, model, geometry),
           stack_paragraph(runs), "",
           "Two words recur below. The *bandwidth line* of a step (its plain roofline) is "
           "the tokens per second the card's datasheet bandwidth allows at that step's "
           "streams and context if each step moves the weights once, each stream's "
           "recurrent state twice (read and written) and its KV cache once, and every "
           "stream keeps one token per step; *η* is the share of that line a step "
           "reaches.", "", "### What the runs found", "", findings_paragraph(found), ""]
    if "h200" in figures:
        out += [f"![BF16 and FP8 decode against their bandwidth lines]({figures['h200']})", ""]
    if "bandwidth share" in by:
        out += [share_table(by["bandwidth share"]), "",
                share_words(by["bandwidth share"], "what FP8 buys" in by), ""]
    if "context" in by:
        out += [context_table(by["context"]), "", context_words(by["context"]), ""]
        if "context" in figures:
            out += [f"![Decode against context per stream]({figures['context']})", ""]
    if "step growth" in by:
        out += [bytes_table(by["step growth"]), "",
                "The step follows its bytes to where the state read and written nears the "
                "weights, and η falls a little past it.", ""]
    if "long prompts" in by:
        out += [long_table(by["long prompts"]), ""]
        if "long" in figures:
            out += [f"![Long prompts: all streams decoding against mean TPOT]"
                    f"({figures['long']})", ""]
        out += ["All streams decoding sits at the same η as short prompts; the mean-TPOT "
                "reading and end to end fall as the prefills of the second wave take steps.",
                ""]
    if "second wave" in by:
        out += [wave_table(by["second wave"]), "",
                "More waves of the same requests leave the end-to-end speed where one wave "
                "puts it.", ""]
    out += ["### The published figures, each against its own card", "",
            published_paragraph(verdicts), ""]
    if verdict_figure:
        out += [f"![Each published figure against its card's plain roofline and its "
                f"source's model]({verdict_figure})", ""]
    p = [r.provenance for r in runs]
    out += ["### The model", "", model_sentences(model_rows), ""]
    if before_rows:  # the predictions kept before a run, against what it measured
        from claimcheck.report.beforehand_words import body_paragraph
        if words := body_paragraph(before_rows):
            out += [words, ""]
    out += [
            "### Provenance", "",
            f"{len(runs)} runs, {min(x.started_utc[:10] for x in p)} to "
            f"{max(x.started_utc[:10] for x in p)}, each with its exact commands, server log "
            "and 1-Hz telemetry under `data/raw/runs/`.  ",
            f"Every step, every protocol, every verdict and the model table are in "
            f"[the appendix]({appendix}); the tidy tables are in `data/derived/`.", ""]
    return "\n".join(out)
