"""The article's "Update" section as Markdown: tables of measured runs set against the
claims they replay and the roofline, with each run's provenance.

Every tok/s printed says how many streams and how they relate, the per-stream speed, the
context per stream, and whether it is decode (which excludes each request's first token
and prefill) or end to end (which includes prefill, ramp and tail).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from claimcheck.core.claims import Claim
from claimcheck.core.metrics import METRICS
from claimcheck.report.record import Run, engine_facts, reported_steps


def _n(v: float | None, fmt: str = "{:,.1f}") -> str:
    return "n/a" if v is None else fmt.format(v)


def md_table(header: list[str], rows: Iterable[list[str]],
             align: list[str] | None = None) -> str:
    """A GitHub Markdown table; ``align`` holds 'l' or 'r' per column."""
    align = align or ["l"] + ["r"] * (len(header) - 1)
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def provenance_line(run: Run) -> str:
    """One paragraph: card, power limit and measured draw, driver, engine, weights."""
    p = run.provenance
    gpu = (p.get("gpu", {}).get("gpus") or [{}])[0]
    sw = p.get("software", {})
    tel = p.get("telemetry", {}).get("summary", {})
    facts = engine_facts(run)
    eng = p["engine_config"]
    parts = [
        f"**{run.path.name}** ({p['status']}): {gpu.get('name', p['card'])}",
        f"power limit {_n(gpu.get('power_limit_enforced_w'), '{:.0f}')} W enforced "
        f"(default {_n(gpu.get('power_limit_default_w'), '{:.0f}')} W), measured draw "
        f"{_n(tel.get('mean_power_w'), '{:.0f}')} W mean / "
        f"{_n(tel.get('max_power_w'), '{:.0f}')} W max at 1 Hz, mean SM clock "
        f"{_n(tel.get('mean_sm_clock_mhz'), '{:.0f}')} MHz, max "
        f"{_n(tel.get('max_temp_c'), '{:.0f}')} °C",
        f"driver {p.get('gpu', {}).get('driver_version', '?')} "
        f"(CUDA {p.get('gpu', {}).get('cuda_driver_version', '?')})",
        f"vLLM {sw.get('vllm', '?')} ({sw.get('vllm_commit', '?')}), torch "
        f"{sw.get('torch', '?')} (CUDA {sw.get('torch_cuda_runtime', '?')}), FlashInfer "
        f"{sw.get('flashinfer', '?')}",
        f"engine `{p['engine']}`: weights {eng.get('weight_format')}"
        f"{' (online ' + eng['quantization'] + ')' if eng.get('quantization') else ''}, "
        f"KV {eng.get('kv_cache_dtype')}, GDN state {eng.get('mamba_ssm_cache_dtype')}, "
        f"prefix caching {eng.get('prefix_caching')}, max-num-seqs {eng.get('max_num_seqs')}"
        f"; engine reported {_n(facts['weights_gib'], '{:.2f}')} GiB of weights and a KV "
        f"pool of {_n(facts['kv_pool_tokens'], '{:,.0f}')} tokens",
        f"**{p['weights_label']}**"
        + (" (random weights of the real geometry, synthetic tokenizer; speeds are the "
           "engine's, not a model's output quality)" if run.dummy else f" {p['weights']}"),
        f"project commit {str(p.get('project', {}).get('commit'))[:10]}",
    ]
    return "; ".join(parts) + "."


def headline_rows(runs: list[Run]) -> list[list[str]]:
    """Rows for the headline (64-stream batch) table: every pass of every run."""
    rows = []
    for run in runs:
        reported = reported_steps(run)
        for s in run.steps:
            kept = " (kept)" if s in reported and len(run.steps) > 1 else ""
            rows.append([
                f"{run.provenance['card']}, {run.provenance['engine']}, "
                f"{run.provenance['weights_label']}, pass {s['repeat']}{kept}",
                _n(s.get("e2e_output_tok_s")), _n(s.get("aggregate_tpot_tok_s")),
                _n(s.get("median_tpot_ms"), "{:.2f} ms"),
                _n(s.get("per_stream_tok_s")),
                _n(s.get("engine_log_steady_tok_s"))
                + ("" if s.get("engine_log_steady_tok_s") else " (no clean 10-s window)"),
                _n(s.get("mean_ttft_ms") and s["mean_ttft_ms"] / 1000, "{:.2f} s"),
                _n(s.get("telemetry_mean_power_w"), "{:.0f} W"),
                f"{s.get('completed')}/{s.get('requests')}",
            ])
    return rows


HEADLINE_HEADER = ["Run", "End to end, tok/s", "Streams × 1000 / median TPOT, tok/s",
                   "Median TPOT", "Per stream, tok/s", "Engine log, all running, no prefill",
                   "Mean TTFT", "Mean power", "Completed"]


def claim_rows(claims: list[Claim]) -> list[list[str]]:
    """The published rows of the headline table, in the same columns."""
    rows = []
    for c in claims:
        cells = ["" for _ in HEADLINE_HEADER]
        watts = f", {c['power_limit_w']:.0f} W" if c["power_limit_w"] else ""
        cells[0] = f"{c['system']} ({c['id']}), {c['card']}{watts}"
        col = {"e2e_aggregate": 1, "streams_x_1000_over_median_tpot": 2,
               "engine_log_steady": 5}.get(c["metric"])
        if col is None:
            continue
        cells[col] = _n(c["value"], "{:,.0f}")
        cells[4] = _n(c.per_stream_tok_s)
        rows.append(cells)
    return rows


LADDER_HEADER = ["Streams", "Requests", "Median TPOT", "Per stream, 1000 / TPOT, tok/s",
                 "Aggregate, streams × per stream, tok/s", "End to end, tok/s",
                 "Median TTFT", "Roofline (η = 1), tok/s", "Measured / roofline",
                 "Mean power"]


def ladder_rows(run: Run, roof: dict[int, dict[str, Any]]) -> list[list[str]]:
    rows = []
    for s in reported_steps(run):
        r = roof.get(s["streams"], {})
        rt = r.get("roofline_tok_s")
        rows.append([str(s["streams"]), str(s["requests"]),
                     _n(s.get("median_tpot_ms"), "{:.2f} ms"), _n(s.get("per_stream_tok_s")),
                     _n(s.get("aggregate_tpot_tok_s"), "{:,.0f}"),
                     _n(s.get("e2e_output_tok_s"), "{:,.1f}"),
                     _n(s.get("median_ttft_ms"), "{:,.0f} ms"),
                     _n(rt, "{:,.0f}"),
                     _n(s["aggregate_tpot_tok_s"] / rt if rt and s.get("aggregate_tpot_tok_s")
                        else None, "{:.0%}"),
                     _n(s.get("telemetry_mean_power_w"), "{:.0f} W")])
    return rows


def compare_sentence(c: Claim, measured: list[tuple[Run, dict[str, Any]]]) -> str:
    """One sentence: how a claim compares with the measured steps at its stream count (one
    per run of the protocol), by the claim's own definition where the run has it."""
    by_metric = {"e2e_aggregate": ("e2e_output_tok_s", "end to end"),
                 "streams_x_1000_over_median_tpot": ("aggregate_tpot_tok_s",
                                                     "streams × 1000 / median TPOT"),
                 "engine_log_steady": ("engine_log_steady_tok_s", "engine-log steady state")}
    key, label = by_metric.get(c["metric"], ("aggregate_tpot_tok_s",
                                             "streams × 1000 / median TPOT"))
    relation = c["stream_relation"].replace("_", " ")
    streams = "1 stream" if c["streams"] == 1 else f"{c['streams']} {relation}"
    where = (f"{c['card']}" + (f" at {c['power_limit_w']:.0f} W" if c["power_limit_w"]
                               else "") + f", {c['quantization'] or '?'} weights")
    head = (f"- **{c['id']}**: {c['value']:,.0f} tok/s ({METRICS[c['metric']].label}; "
            f"{streams}, {c.per_stream_tok_s:.1f} tok/s per stream, "
            f"{c['context_tokens'] or '?'} tokens of context per stream; {where})")
    parts, missing = [], []
    for run, m in measured:
        p = run.provenance
        got = m.get(key)
        name = f"{p['card']} {p['engine']}"
        if got is None:
            missing.append(f"{name} ({m.get('engine_log_steady_lines', 0)} qualifying "
                           "10-s log windows)")
            continue
        parts.append(f"{got:,.0f} tok/s on {name} ({m['per_stream_tok_s']:.1f} per "
                     f"stream, {got / c['value']:.2f}× the claim)")
    text = head
    if parts:
        text += f" against, by the same definition ({label}): " + "; ".join(parts) + "."
    if missing:
        text += f" No {label} figure from " + ", ".join(missing) + "."
    weights = {r.provenance["weights_label"] for r, _ in measured}
    return text + (f" Other card and {', '.join(sorted(weights))}: this compares the "
                   "protocol's numbers, not the recipe.")


def _replayed(run: Run, claims: list[Claim]) -> list[Claim]:
    ids = set(run.provenance["protocol_config"].get("source_claims", []))
    return [c for c in claims if c["id"] in ids]


def render_run_md(run: Run, steps: list[dict[str, Any]], claims: list[Claim]) -> str:
    """Markdown for one run: provenance, its table, the claims it replays."""
    p = run.provenance
    proto = p["protocol_config"]
    ctx = proto["input_len"] + proto["output_len"]
    out = [f"### {run.path.name}",
           "",
           f"Protocol `{p['protocol']}`: {proto['description']}",
           "",
           f"Workload: {proto['input_len']} tokens in, {proto['output_len']} out "
           f"(`--ignore-eos`), so {ctx} tokens of context per stream at the end of each "
           "request; streams are independent requests from `vllm bench serve` "
           "(`--max-concurrency`), a fresh random seed per call. Decode figures exclude "
           "each request's first token; end-to-end figures include prefill, ramp and tail.",
           "", provenance_line(run), ""]
    if p["protocol"] == "ladder":
        roof = {s["streams"]: s for s in steps if s.get("reported")}
        out.append(md_table(LADDER_HEADER, ladder_rows(run, roof)))
    else:
        out.append(md_table(HEADLINE_HEADER, claim_rows(_replayed(run, claims))
                            + headline_rows([run]),
                            ["l"] + ["r"] * (len(HEADLINE_HEADER) - 1)))
    return "\n".join(out) + "\n"


def render_update(runs: list[Run], steps: list[dict[str, Any]], claims: list[Claim],
                  card: str, figures: dict[str, str]) -> str:
    """The whole Update section for the runs of one card."""
    runs = [r for r in runs if r.provenance["card"] == card]
    if not runs:
        return f"## Update\n\nNo recorded runs for {card} yet.\n"
    dummy = any(r.dummy for r in runs)
    first = runs[0].provenance
    gpu = (first.get("gpu", {}).get("gpus") or [{}])[0]
    days = sorted({r.provenance["started_utc"][:10] for r in runs})
    out = [f"## Update, {', '.join(days)}: the published protocols on one "
           f"{gpu.get('name', card)}" + (" (dummy weights)" if dummy else ""), ""]
    if dummy:
        out += ["> **Dummy weights.** These runs serve the real Qwen3.8-27B geometry "
                "(`config.json`, 64 layers, 27.78 B parameters) with random weights "
                "(`--load-format dummy`) and a synthetic tokenizer, because no checkpoint "
                "could be downloaded on the GPU host. Speed depends on the geometry, the "
                "dtypes and the engine, not on the weights' values, but these are not runs "
                "of the published checkpoints.", ""]
    out += ["Every run below was made by `claimcheck measure` with the exact commands kept "
            "in its `provenance.json` under `data/raw/runs/`.", ""]
    by_proto: dict[str, list[Run]] = {}
    for r in runs:
        by_proto.setdefault(r.provenance["protocol"], []).append(r)
    srows = {(s["run"], s["streams"]): s for s in steps if s.get("reported")}
    if "hyperqwen-batch" in by_proto:
        hr = by_proto["hyperqwen-batch"]
        out += ["### The headline workload (HyperQwen's batch protocol)", "",
                "64 independent requests at a time, 256 in all, 128 tokens in and 512 out "
                "(640 tokens of context per stream), run twice; the second pass is the one "
                "the README keeps. Published rows first, then this project's.", "",
                md_table(HEADLINE_HEADER, claim_rows(_replayed(hr[0], claims))
                         + headline_rows(hr)), ""]
        for r in hr:
            if f"measured-{r.path.name}" in figures:
                out.append(f"![{r.path.name}]({figures[f'measured-{r.path.name}']})")
        out.append("")
    if "ladder" in by_proto:
        for r in by_proto["ladder"]:
            roof = {s["streams"]: s for (run, _), s in srows.items() if run == r.path.name}
            out += ["### The concurrency ladder", "",
                    "The same workload at 1, 8, 16, 32 and 64 streams (independent requests) "
                    "with 16, 64, 128, 128 and 256 requests. Per stream is 1000 / median TPOT "
                    "(decode); aggregate is streams × per stream; end to end includes "
                    "prefill. The roofline uses the weight GiB the engine reported, this "
                    "engine's state and KV dtypes, 640 tokens of context and the card's "
                    "datasheet bandwidth at η = 1.", "",
                    md_table(LADDER_HEADER, ladder_rows(r, roof)), ""]
            if f"measured-{r.path.name}" in figures:
                out.append(f"![{r.path.name}]({figures[f'measured-{r.path.name}']})")
            out.append("")
    out += ["### Long prompts", "",
            "Not run yet: the 7,681-in / 511-out protocol of the article's long-prompt table "
            "is not in `config/protocols.yaml`.", ""]
    out += ["### How each claim compares", ""]
    for rs in by_proto.values():
        for c in _replayed(rs[-1], claims):
            ms = [(r, srows[(r.path.name, c["streams"])]) for r in rs
                  if (r.path.name, c["streams"]) in srows]
            if ms:
                out.append(compare_sentence(c, ms))
    out += ["", "### Provenance", ""]
    out += [f"- {provenance_line(r)}" for r in runs]
    if figures:
        out += ["", "### Figures", ""]
        out += [f"- [{name}]({path})" for name, path in sorted(figures.items())]
    return "\n".join(out) + "\n"
