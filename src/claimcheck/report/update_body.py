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
from typing import Any

from claimcheck.core.frames import flag, number
from claimcheck.core.geometry import Geometry
from claimcheck.report import context_cost as CC
from claimcheck.report import engine_version as EV
from claimcheck.report import findings as F
from claimcheck.report import stepframe as SF
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
from claimcheck.report.update_words import dummy_note
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


def render_body(runs: list[Run], card: str,
                figures: dict[str, str], verdicts: list[dict[str, Any]],
                model_rows: list[dict[str, Any]], appendix: str,
                model: str | None = None, geometry: Geometry | None = None,
                verdict_figure: str | None = None,
                protocols: list[str] | None = None,
                log: list[str] | None = None,
                before_rows: list[dict[str, Any]] | None = None,
                claims: list[dict[str, Any]] | None = None,
                appendix_extra: list[str] | None = None) -> str:
    """figures/update.md: the body an article can print, in the article's own form: a
    title stating the main finding, the dummy-weights box, the stack, the findings (each a
    sentence with its numbers, computed and checked by :mod:`claimcheck.report.findings`),
    at most five narrow tables each followed by what it shows, the published figures in
    one paragraph, the model in three sentences and, from ``before_rows`` (the
    predictions kept before a run, :mod:`claimcheck.report.beforehand`), how they fared,
    provenance in two lines. ``log`` gets one line per finding left out. Where the runs
    are of more than one vLLM release, the findings read the release with the most steps
    and the others are set against it step by step (:mod:`~claimcheck.report.engine_version`,
    ``claims``: the registry rows, to name the figures made with the other release);
    ``appendix_extra`` gets what the body leaves to the appendix."""
    runs, every = card_frame(runs, card, release=None)
    if not runs:
        return f"## Update\n\nNo recorded runs for {card} yet.\n"
    base = EV.main_version(every)
    frame = EV.of_version(every, base)
    found = F.all_findings(frame)
    version = EV.engine_version(every, base)
    if log is not None:
        log += F.report([*found, version])
    by = {x.key: x for x in found if x.holds}
    out = [body_title(found, runs), "", *dummy_note(runs, model, geometry),
           stack_paragraph(runs), "",
           "Two words recur below. The *bandwidth line* of a step (its plain roofline) is "
           "the tokens per second the card's datasheet bandwidth allows at that step's "
           "streams and context if each step moves the weights once, each stream's "
           "recurrent state twice (read and written) and its KV cache once, and every "
           "stream keeps one token per step; *η* is the share of that line a step "
           "reaches.", "", "### What the runs found", "",
           *([release_words(runs, base, version), ""] if version.holds else []),
           findings_paragraph(found), ""]
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
    if "second wave" in by and appendix_extra is not None:
        appendix_extra += ["## One wave against several", "", wave_table(by["second wave"]),
                           "", "More waves of the same requests leave the end-to-end speed "
                           "where one wave puts it.", ""]
    if version.holds:
        other = version.rows[0]["other"]
        mine = [r for r in runs if run_version(r) == other]
        builds = sorted({f"commit {EV.commit_words(r.provenance.sw('vllm_commit'))}"
                         for r in mine if r.provenance.sw("vllm_commit")})
        pub = EV.published_with(claims or [], other)
        if pub.rows and appendix_extra is not None:
            appendix_extra += [f"## Published with vLLM {other}", "",
                               EV.published_table(version, pub), ""]
        out += [f"### vLLM {base} against {other}", "", version.sentence, "",
                " ".join(x for x in (
                    EV.published_words(version, pub, ", ".join(builds)),
                    EV.model_words(model_rows, {r.name for r in mine}, other)) if x), "",
                EV.version_table(version), ""]
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
