"""figures/update.md: the Update's body an article can print (short prose, the findings
and their tables), in the article's own form; everything else goes to the appendix
(:func:`claimcheck.report.update.render_update`).

Every tok/s printed says how many streams and how they relate, the per-stream speed, the
context per stream, and whether it is decode (which excludes each request's first token
and prefill) or end to end (which includes prefill, ramp and tail).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from claimcheck.core.frames import flag, number
from claimcheck.core.geometry import Geometry
from claimcheck.core.verdicts import TOLERANCE
from claimcheck.report import context_cost as CC
from claimcheck.report import engine_version as EV
from claimcheck.report import findings as F
from claimcheck.report import stepframe as SF
from claimcheck.report import template as T
from claimcheck.report import update_values as UV
from claimcheck.report.h200_fig import card_frame
from claimcheck.report.layout import run_version
from claimcheck.report.update_tables import (
    bytes_table,
    context_table,
    context_words,
    long_table,
    share_table,
    share_words,
    wave_table,
)
from claimcheck.runio.run import Run


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
    """The findings that hold, each its own paragraph (its sentences as computed)."""
    return "\n\n".join(x.sentence for x in found if x.holds)


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


def release_words(runs: list[Run], base: str | None, version: Any) -> str:
    """Which runs the findings read when the runs are of more than one vLLM release."""
    n = Counter(run_version(r) for r in runs)
    other = version.rows[0]["other"]
    return (f"The findings below read the {n[base]} runs made with vLLM {base}; the "
            f"{n[other]} runs made with {other} are set against them step by step under "
            f"*vLLM {base} against {other}*.")


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


TEMPLATES = Path(__file__).parent / "templates"
BODY_TEMPLATE = TEMPLATES / "body.md"
CLAIM_TEMPLATE = TEMPLATES / "claim.md"
CLAIM_SLOT = "claim."


def _joined(xs: Iterable[str]) -> str:
    xs = sorted(set(xs))
    return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]


def header_values(runs: list[Run], geometry: Geometry | None, model: str | None,
                  figures: dict[str, str], verdict_figure: str | None, appendix: str,
                  verdicts: list[dict[str, Any]], model_rows: list[dict[str, Any]],
                  version: Any) -> list[T.Value]:
    """The body's values outside the claims and findings: the title, the stack, the
    engines with their commits and flags, the figures, the release comparison, the model's
    counts and the provenance."""
    from claimcheck.report import verdicts_md
    p = [r.provenance for r in runs]
    prov = "run provenance.json"
    days = sorted(x.started_utc[:10] for x in p)
    engines: dict[str, list[str]] = {}
    for r in runs:
        engines.setdefault(engine_words(r), []).append(r.provenance.engine)
    eng = "The engines, each with its exact flags in its runs' `provenance.json`: " + "; ".join(
        f"{', '.join(f'`{e}`' for e in sorted(set(names)))}, {words}"
        for words, names in sorted(engines.items())) + "."
    commits = _joined(f"commit {EV.commit_words(x.sw('vllm_commit'))}" for x in p
                      if x.sw("vllm_commit"))
    ms = verdicts_md.model_summary(model_rows) if model_rows else None
    names = sorted({str(r["engine"]) for r in model_rows if r.get("engine")})
    out = [T.word("date", days[-1], prov),
           T.word("card", (p[0].gpu.name or p[0].card) + (" (dummy weights)"
                                                          if any(r.dummy for r in runs)
                                                          else ""), prov),
           T.flag("dummy", any(r.dummy for r in runs), prov),
           T.word("model", model or "model", "config.yaml model_name"),
           T.num("layers", geometry.num_layers if geometry else None, "layers",
                 "model config.json", "{:,}"),
           T.num("runs", len(runs), "runs", prov, "{:,}"),
           T.word("first_day", days[0], prov), T.word("last_day", days[-1], prov),
           T.word("vllm", _joined(str(x.sw("vllm")) for x in p), prov),
           T.word("commits", commits or "no commit recorded", prov),
           T.word("torch", _joined(str(x.sw("torch")).split("+")[0] for x in p), prov),
           T.word("driver", _joined(x.driver_version or "not recorded" for x in p), prov),
           T.word("engines", eng, prov),
           T.word("appendix", appendix, "update rule"),
           T.flag("fig.has_decode", bool(figures.get("h200")), "update rule figures"),
           T.flag("fig.has_long", bool(figures.get("long")), "update rule figures"),
           T.flag("fig.has_verdicts", bool(verdict_figure), "update rule figures"),
           T.flag("model.has", bool(ms), "model.csv"),
           T.word("fig.decode", figures.get("h200"), "update rule figures"),
           T.word("fig.long", figures.get("long"), "update rule figures"),
           T.word("fig.verdicts", verdict_figure, "update rule figures"),
           T.num("verdicts.n", len(verdicts), "figures", "verdicts.json", "{:,}"),
           T.num("model.tolerance", TOLERANCE, "fraction", "core.verdicts TOLERANCE", "{:.0%}"),
           T.num("model.both", ms["both"] if ms else None, "steps", "model.csv", "{:,}"),
           T.num("model.steps", ms["steps"] if ms else None, "steps", "model.csv", "{:,}"),
           T.word("model.figures", ", ".join(f"[`{e}`](model-{e}.png)" for e in names),
                  "model.csv engines"),
           T.flag("release.holds", version.holds, "finding 'engine version'")]
    if version.holds:
        out += [T.num("release.levels", version.numbers["levels"], "levels",
                      "finding 'engine version'", "{:,.0f}"),
                T.num("release.median", version.numbers["e2e_median"], "fraction",
                      "finding 'engine version'", "{:+.1%}"),
                T.word("release.base", str(version.rows[0]["base"]), "finding 'engine version'"),
                T.word("release.other", str(version.rows[0]["other"]),
                       "finding 'engine version'")]
    else:
        out += [T.word(f"release.{k}", "none", "finding 'engine version'")
                for k in ("levels", "median", "base", "other")]
    return out


def claim_sections(families: list[dict[str, Any]], values: dict[str, T.Value]) -> str:
    """One section per family, in the file's order: its title and each claim's paragraph
    from the claim template, the claim's values read as ``claim.*``."""
    template = CLAIM_TEMPLATE.read_text()
    out = []
    for fam in families:
        where = "family " + str(fam["key"]) + " title"
        out += ["### " + T.render(fam["title"], values, where).strip(), ""]
        for i in fam["claims"]:
            scope = {CLAIM_SLOT + k[len(i) + 1:]: v for k, v in values.items()
                     if k.startswith(i + ".")}
            text = T.render(template, scope, f"{CLAIM_TEMPLATE.name} for {i}")
            out += [" ".join(line for line in text.splitlines() if line.strip()), ""]
    return "\n".join(out).strip()


def render_body(runs: list[Run], card: str,
                figures: dict[str, str], verdicts: list[dict[str, Any]],
                model_rows: list[dict[str, Any]], appendix: str,
                model: str | None = None, geometry: Geometry | None = None,
                verdict_figure: str | None = None,
                protocols: list[str] | None = None,
                log: list[str] | None = None,
                before_rows: list[dict[str, Any]] | None = None,
                claims: list[dict[str, Any]] | None = None,
                appendix_extra: list[str] | None = None,
                families: list[dict[str, Any]] | None = None,
                values_out: dict[str, T.Value] | None = None,
                predictions: dict[str, float] | None = None) -> str:
    """figures/update.md from the body template (templates/body.md): the lead, one section
    per claim family (``families``, config/update_claims.yaml; each claim from
    templates/claim.md), what this card showed, provenance. Every number is a named value
    (:mod:`claimcheck.report.update_values`, collected in ``values_out`` for
    data/derived/update_values.csv); a slot the values cannot fill stops the render naming
    it. ``log`` gets one line per finding left out; the findings' tables go to
    ``appendix_extra``. ``predictions``: claim id -> tok/s this card's model gives on the
    claim's own card (the optional local prediction; None: each claim says why not)."""
    runs, every = card_frame(runs, card, release=None)
    if not runs:
        return f"## Update\n\nNo recorded runs for {card} yet.\n"
    base = EV.main_version(every)
    frame = EV.of_version(every, base)
    found = F.all_findings(frame)
    version = EV.engine_version(every, base)
    if log is not None:
        log += F.report([*found, version])
    values = T.table([
        *header_values(runs, geometry, model, figures, verdict_figure, appendix, verdicts,
                       model_rows, version),
        *UV.family_values(families or [], claims or [], verdicts, "config/update_claims.yaml",
                          predictions),
        *UV.card_values(found, frame)])
    if values_out is not None:
        values_out.update(values)
    by = {x.key: x for x in found if x.holds}
    if appendix_extra is not None:
        appendix_extra += _appendix_tables(by)
    sections = claim_sections(families or [], values)
    body = T.render(BODY_TEMPLATE.read_text().replace("{{families}}", sections), values,
                    BODY_TEMPLATE.name)
    return body


def _appendix_tables(by: dict[str, Any]) -> list[str]:
    """The findings' tables, each with what it shows, for the appendix."""
    out = ["## The findings' tables", ""]
    if "bandwidth share" in by:
        out += [share_table(by["bandwidth share"]), "",
                share_words(by["bandwidth share"], "what FP8 buys" in by), ""]
    if "context" in by:
        out += [context_table(by["context"]), "", context_words(by["context"]), ""]
    if "step growth" in by:
        out += [bytes_table(by["step growth"]), ""]
    if "long prompts" in by:
        out += [long_table(by["long prompts"]), ""]
    if "second wave" in by:
        out += ["### One wave against several", "", wave_table(by["second wave"]), ""]
    return out
