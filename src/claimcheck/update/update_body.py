"""figures/update.md: the Update's body an article can print, in the article's own form and
order, rendered from templates/body.md and templates/claim.md with named values
(:mod:`claimcheck.update.template`, :mod:`claimcheck.update.update_values`): the lead, one
section per claim family (config/update_claims.yaml), what this card showed (the article's
open question first), provenance. The findings' tables and the release table go to the
appendix (:func:`claimcheck.update.update.render_update` and ``appendix_extra``).

Every tok/s printed says how many streams and how they relate, the per-stream speed, the
context per stream, and whether it is decode (which excludes each request's first token
and prefill) or end to end (which includes prefill, ramp and tail).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from claimcheck.figures.h200_fig import card_frame
from claimcheck.findings import engine_version as EV
from claimcheck.findings import findings as F
from claimcheck.findings.update_tables import (
    bytes_table,
    context_table,
    context_words,
    long_table,
    share_table,
    share_words,
    wave_table,
)
from claimcheck.physics.geometry import Geometry
from claimcheck.runs.run import Run
from claimcheck.update import carry_words as CW
from claimcheck.update import template as T
from claimcheck.update import update_values as UV
from claimcheck.update.crossval_words import cv_values
from claimcheck.update.spec_values import spec_values
from claimcheck.update.update_words import plural
from claimcheck.verdicts.verdicts import TOLERANCE


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
            + (", prefix caching on" if ec.prefix_caching else "")
            + (f", {run.acceptance}" if run.drafts else ""))


TEMPLATES = Path(__file__).parent / "templates"
BODY_TEMPLATE = TEMPLATES / "body.md"
CLAIM_TEMPLATE = TEMPLATES / "claim.md"
CLAIM_SLOT = "claim."


def _joined(xs: Iterable[str]) -> str:
    xs = sorted(set(xs))
    return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]


def measured(run: Any) -> bool:
    """Whether a run has a step that completed (a run recorded as failed or interrupted
    before any step ended measured nothing)."""
    return any(s.get("status") == "complete" for s in run.rows)


def unmeasured_values(runs: list[Any]) -> list[T.Value]:
    """The runs of the card with no completed step, named with their recorded status
    (``unmeasured.has``, ``unmeasured.words``): a failed run is said, not dropped."""
    gone = sorted((r for r in runs if not measured(r)), key=lambda r: r.name)
    src = "run provenance.json"
    if not gone:
        return [T.flag("unmeasured.has", False, src), T.word("unmeasured.words", None, src)]
    names = _joined(f"`{r.name}` ({r.provenance.status})" for r in gone)
    lead = "One more run" if len(gone) == 1 else f"{len(gone):,} more runs"
    verb = "was" if len(gone) == 1 else "were"
    return [T.flag("unmeasured.has", True, src),
            T.word("unmeasured.words", f"{lead} {verb} recorded with no step measured: "
                   f"{names}.", src)]


def cards_phrase(runs: list[Any], name: str, note: str = "") -> str:
    """Where ``runs`` ran, told apart by the card's NVML uuid (provenance ``gpu.gpus[0]``):
    "on one NAME" for one run or where every run records one and the same uuid, else "on
    N NAME cards (one card a run, told apart by NVML uuid)", N the distinct uuids ("N or
    more" and how many runs record none where some do not). ``note`` (as "dummy
    weights") goes in the parentheses."""
    uuids = [r.provenance.gpu.uuid for r in runs]
    seen = {u for u in uuids if u}
    missing = sum(1 for u in uuids if not u)
    if len(runs) == 1 or (len(seen) == 1 and not missing):
        return f"on one {name}" + (f" ({note})" if note else "")
    if not seen:
        return (f"on one {name} each (no run records its card's NVML uuid"
                + (f"; {note})" if note else ")"))
    many = f"{len(seen):,}" + (" or more" if missing else "")
    why = "one card a run, told apart by NVML uuid" + (
        f", {plural(missing, 'run')} recording none" if missing else "")
    return f"on {many} {name} cards ({why}" + (f"; {note})" if note else ")")


def other_card_values(runs: list[Any], card: str) -> list[T.Value]:
    """The runs on cards other than ``card`` (``other.has``, ``other.words``): how many, on
    which card (its recorded GPU name) and of how many engines, said so that the body's
    counts are not read as theirs; the model's runs-left-out count includes them."""
    src = "run provenance.json"
    by: dict[str, list[Any]] = {}
    for r in runs:
        if r.provenance.card != card:
            by.setdefault(r.provenance.card, []).append(r)
    if not by:
        return [T.flag("other.has", False, src), T.word("other.words", None, src)]
    parts = []
    for c, rs in sorted(by.items()):
        gpu = rs[0].provenance.gpu.name or c
        n_eng = len({r.provenance.engine for r in rs})
        parts.append(f"{len(rs):,} more run{'s' if len(rs) != 1 else ''} of {n_eng:,} "
                     f"engine{'s' if n_eng != 1 else ''} {cards_phrase(rs, gpu)}")
    one = sum(len(rs) for rs in by.values()) == 1
    return [T.flag("other.has", True, src),
            T.word("other.words", f"{_joined(parts)} {'is' if one else 'are'} in none of "
                   "these counts or the sections below: the model's count with each run left "
                   f"out includes {'it' if one else 'them'}, and its appendix table lists "
                   f"{'it' if one else 'them'} run by run.", src)]


def header_values(runs: list[Run], geometry: Geometry | None, model: str | None,
                  figures: dict[str, str], verdict_figure: str | None, appendix: str,
                  verdicts: list[dict[str, Any]], model_rows: list[dict[str, Any]],
                  version: Any, plain: list[Run] | None = None) -> list[T.Value]:
    """The body's values outside the claims and findings: the title, the stack, the
    engines with their commits and flags, the figures, the release comparison, the model's
    counts and the provenance. ``runs``: every run of the card, drafting ones included
    (the provenance counts them); ``plain``: those of them that do not draft and measured a
    step (the lead counts them and their cards; the drafting ones are the other measured
    runs)."""
    from claimcheck.verdicts import verdicts_md
    p = [r.provenance for r in runs]
    plain = runs if plain is None else plain
    drafting = sum(measured(r) for r in runs) - len(plain)
    prov = "run provenance.json"
    days = sorted(x.started_utc[:10] for x in p)
    engines: dict[str, list[str]] = {}
    for r in runs:
        engines.setdefault(engine_words(r), []).append(r.provenance.engine)
    eng = " ".join(
        f"{_joined(f'`{e}`' for e in names)} served {words}." for words, names
        in sorted(engines.items())) + " Each run's exact flags are in its `provenance.json`."
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
           T.num("plain_runs", len(plain), "runs", prov, "{:,}"),
           T.word("plain_where", cards_phrase(plain, p[0].gpu.name or p[0].card,
                                              "dummy weights" if any(r.dummy for r in runs)
                                              else ""), prov),
           T.word("drafting_runs", "one more run" if drafting == 1 else f"{drafting:,} more runs",
                  prov),
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
           T.num("model.tolerance", TOLERANCE, "fraction", "verdicts.verdicts TOLERANCE", "{:.0%}"),
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
                predictions: dict[str, Any] | None = None,
                carried_rows: list[dict[str, Any]] | None = None,
                speculation: list[dict[str, Any]] | None = None,
                crossval: list[dict[str, Any]] | None = None) -> str:
    """figures/update.md from the body template (templates/body.md): the lead, one section
    per claim family (``families``, config/update_claims.yaml; each claim from
    templates/claim.md), what this card showed, provenance. Every number is a named value
    (:mod:`claimcheck.update.update_values`, collected in ``values_out`` for
    data/derived/update_values.csv); a slot the values cannot fill stops the render naming
    it. ``log`` gets one line per finding left out; the findings' tables go to
    ``appendix_extra``. ``predictions``: claim id -> what this card's runs predict on the
    claim's own card (tok/s, or :func:`claimcheck.update.update_values.prediction_of`'s
    dict: the carried model's number, what it carried and assumed, or why there is none;
    None: each claim says why not). ``carried_rows``: data/derived/carried_3090.csv, for
    the sentence on the carried model's test on the article's RTX 3090 ladder
    (:mod:`claimcheck.update.carry_words`; None or empty: no sentence).
    ``speculation``: data/derived/speculation.csv's rows (what a verify costs on this card,
    :mod:`claimcheck.update.spec_values`; None: the paragraph is left out).
    ``crossval``: data/derived/crossval.csv's rows (the model with each run left out,
    :mod:`claimcheck.update.crossval_words`; None: not said)."""
    on_card = [r for r in runs if r.provenance.card == card]
    elsewhere = other_card_values(runs, card)
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
        *header_values(on_card, geometry, model, figures, verdict_figure, appendix, verdicts,
                       model_rows, version, plain=[r for r in runs if measured(r)]),
        *unmeasured_values(on_card),
        *elsewhere,
        *UV.family_values(families or [], claims or [], verdicts, "config/update_claims.yaml",
                          predictions),
        *UV.card_values(found, frame),
        *CW.ladder_values(carried_rows or [], verdicts),
        *spec_values(speculation, figures.get("speculation")),
        *cv_values(crossval)])
    if values_out is not None:
        values_out.update(values)
    by = {x.key: x for x in found if x.holds}
    if appendix_extra is not None:
        appendix_extra += _appendix_tables(by)
        if version.holds:
            other = version.rows[0]["other"]
            pub = EV.published_with(claims or [], other)
            appendix_extra += [f"## vLLM {base} against {other}", "",
                               EV.version_table(version), ""]
            if pub.rows:
                appendix_extra += [f"## Published with vLLM {other}", "",
                                   EV.published_table(version, pub), ""]
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
