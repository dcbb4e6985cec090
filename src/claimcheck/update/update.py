"""The Update's appendix (figures/update-appendix.md) as Markdown: a section per protocol
with every step of every run set against the claims it replays and the roofline, one
sentence per replayed claim, and each run's provenance. The printable body is
:mod:`claimcheck.update.update_body`.

Every tok/s printed says how many streams and how they relate, the per-stream speed, the
context per stream, and whether it is decode (which excludes each request's first token
and prefill) or end to end (which includes prefill, ramp and tail).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from claimcheck.claims.metrics import METRICS
from claimcheck.config.protocols import Protocol, relation_words, step_context
from claimcheck.files import mdtext as md
from claimcheck.findings import findings as F
from claimcheck.findings import stepframe as SF
from claimcheck.physics.geometry import Geometry
from claimcheck.readings import definitions as d
from claimcheck.runs.run import Run
from claimcheck.update import sections
from claimcheck.update.update_metrics import REPORT_METRICS, Column, metric_columns
from claimcheck.update.update_words import dummy_note, plural


def provenance_line(run: Run) -> str:
    """One paragraph: card, power limit and measured draw, driver, engine, weights."""
    p = run.provenance
    gpu, tel, eng = p.gpu, p.telemetry, p.engine_config
    parts = [
        f"**{run.name}** ({p.status}): {gpu.name or p.card}"
        + (f" (uuid {gpu.uuid})" if gpu.uuid else ""),
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


def protocol_table(proto: Protocol, runs: list[Run], claims: list[dict[str, Any]],
                   source: str) -> str:
    """One table for a protocol: its replayed claims first (each in the column of its own
    metric), then every step of every run; failed steps say so with their reason."""
    cols = metric_columns(proto, source)
    varied = len({(st.input_len, st.output_len) for st in proto.steps}) > 1
    header = (["Run", "Streams", "Requests"]
              + (["Prompt + output, tokens per stream"] if varied else [])
              + [c.header for c in cols]
              + ["Roofline (η = 1), tok/s", "Streams × 1000 / median TPOT ÷ roofline",
                 "Completed"])
    out: list[list[str]] = []
    by_key = {REPORT_METRICS[m].key: i for i, m in enumerate(proto.metrics)}
    per_stream = next((i for i, m in enumerate(proto.metrics)
                       if REPORT_METRICS[m].holds_claims_per_stream), None)
    for c in _replayed(proto, claims):
        col = REPORT_METRICS.get(c["metric"])
        if col is None or col.key not in by_key:
            continue
        cells = ["" for _ in header]
        watts = f", {c['power_limit_w']:.0f} W" if c["power_limit_w"] else ""
        cells[0] = f"{c['system']} ({c['id']}), {c['card']}{watts}"
        cells[1] = str(c["streams"])
        first = 4 if varied else 3  # the first metric column
        cells[first + by_key[col.key]] = md.num(c["value"], "{:,.0f}")
        if per_stream is not None:
            cells[first + per_stream] = md.num(c["per_stream_tok_s"])
        out.append(cells)
    for run in runs:
        kept = {id(s) for s in run.reported}
        for s in run.rows:
            cells = [_step_label(run, s, id(s) in kept, len(run.rows) > len(proto.steps)),
                     str(s["streams"]), str(s["requests"])]
            if varied:
                cells.append(f"{s['input_len']:,} + {s['output_len']:,}"
                             if s.get("input_len") is not None else "not recorded")
            if s["status"] != "complete":
                cells += [f"**{s['status']}**: {s['reason'] or 'no reason recorded'}"]
                cells += ["" for _ in range(len(header) - len(cells))]
                out.append(cells)
                continue
            rt, agg = s.get("roofline_tok_s"), s.get("streams_x_1000_over_median_tpot_tok_s")
            cells += [_cell(s, c) for c in cols]
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
    here (see :attr:`claimcheck.runs.run.Run.reported`)."""
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
            per = (d.per_stream(got, m["streams"], p.engine_config.max_num_seqs)
                   if METRICS[c["metric"]].scope == "aggregate" else got)
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


def protocol_section(proto: Protocol, runs: list[Run], claims: list[dict[str, Any]],
                     figures: dict[str, str],
                     level: str = "###", others: list[Run] | None = None,
                     nominal_w: dict[str, float] | None = None,
                     description: str | None = None) -> str:
    """The section of one protocol: what it runs, its table, the blocks its data asks for
    (gate, all-streams decode, lanes, closed loop, one stream; see
    :mod:`claimcheck.update.sections`), each run's figure. ``others``: every run of the
    card (for same-shape comparisons); ``nominal_w``: card -> rated board power, W."""
    out = [f"{level} Protocol `{proto.name}`", "", description or proto.description, "",
           workload_sentence(proto), "",
           protocol_table(proto, runs, claims, str(runs[0].path / "provenance.json")), ""]
    blocks = [sections.gate_block(proto, runs, claims, nominal_w),
              sections.admit_block(proto, runs, others or runs),
              sections.lanes_block(proto, runs, claims),
              sections.closed_loop_block(proto, runs, claims),
              sections.single_stream_block(proto, runs)]
    out += [b for b in blocks if b]
    for r in runs:
        if f"measured-{r.name}" in figures:
            out.append(f"![{r.name}]({figures[f'measured-{r.name}']})")
    return "\n".join(out) + "\n"


def render_run_md(run: Run, claims: list[dict[str, Any]]) -> str:
    """Markdown for one run: its protocol's section and its provenance."""
    return (f"### {run.name}\n\n" + protocol_section(run.protocol, [run], claims, {},
                                                      level="####")
            + "\n" + provenance_line(run) + "\n")


def render_update(runs: list[Run], claims: list[dict[str, Any]], card: str,
                  figures: dict[str, str],
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
    rank = body_order(runs)
    for r in sorted(runs, key=lambda r: (rank.get(r.protocol.name, len(rank)),
                                         r.protocol.name, r.name)):
        by_proto.setdefault(r.protocol.name, []).append(r)
    for name, rs in by_proto.items():
        out.append(protocol_section(rs[-1].protocol, rs, claims, figures,
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
            ms = [(r, s) for r in rs for s in r.reported
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


def update_title(runs: list[Run], card: str) -> str:
    """The section's heading: dates, card, and dummy weights where any run used them."""
    first = runs[0].provenance
    days = sorted({r.provenance.started_utc[:10] for r in runs})
    return (f"## Update, {', '.join(days)}: the published protocols on one "
            f"{first.gpu.name or card}" + (" (dummy weights)" if any(r.dummy for r in runs)
                                          else ""))


def body_order(runs: list[Run]) -> dict[str, int]:
    """Protocol name -> its place in the body: the order in which the findings first read
    a run of it (the appendix follows the body's order)."""
    proto = {r.name: r.protocol.name for r in runs}
    found = F.all_findings(SF.step_frame(pd.DataFrame([s for r in runs for s in r.rows]),
                                        SF.engine_rows(runs)))
    order: dict[str, int] = {}
    for x in found:
        for row in x.rows:
            for run in str(row.get("runs") or row.get("run") or "").split(", "):
                if run in proto:
                    order.setdefault(proto[run], len(order))
    return order
