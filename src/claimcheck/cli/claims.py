"""``claimcheck claims``: list the claims registry, or validate it against its seeds."""

from __future__ import annotations

import argparse
from pathlib import Path

from claimcheck.claims.registryfiles import load_claims


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``claims`` command and its options."""
    c = sub.add_parser("claims", help="list or validate the claims registry")
    c.add_argument("--file", default=None,
                   help="a registry CSV to read instead of data/raw/claims.csv")
    c.add_argument("--check", action="store_true",
                   help="validate: structure, every quote against its seed article, the "
                        "exclusions")
    c.add_argument("--json", action="store_true", help="print JSON instead of the table")


def cmd_claims(a: argparse.Namespace) -> int:
    """List the registry, or with --check validate it: structure, then every quote against
    its seed and the exclusions beside it (the seeds' absence is said, never passed over)."""
    from claimcheck.claims.registryfiles import load_excluded
    from claimcheck.claims.seedfiles import check_against_seeds, seeds_dir
    from claimcheck.files.io import dumps_json
    from claimcheck.files.paths import RAW
    from claimcheck.physics.cardfiles import load_cards

    path = Path(a.file) if a.file else RAW / "claims.csv"
    claims = load_claims(path, cards=set(load_cards()))
    if a.check:
        beside = path.parent / "claims_excluded.csv"
        excl_path = beside if beside.exists() else RAW / "claims_excluded.csv"
        folder = seeds_dir()
        if folder is None:
            print(f"{path}: {len(claims)} claims, structure OK; quotes NOT checked: no seed "
                  "articles at ../shared/seeds beside the repository (set CLAIMCHECK_SEEDS)")
            return 0
        excluded = load_excluded(excl_path)
        check_against_seeds(claims, str(path), folder, excluded, str(excl_path))
        n_assumed = sum(1 for c in claims if c.assumed)
        print(f"{path}: {len(claims)} claims OK (quotes found in {folder}; {n_assumed} rows "
              f"carry assumed fields); {excl_path.name}: {len(excluded)} exclusions OK")
        return 0
    rows = [c.tidy() for c in claims]
    if a.json:
        print(dumps_json(rows, indent=2))
        return 0
    lines = [f"{'id':<34} {'card':<8} {'streams':>13} {'relation':<20} {'context':>8} "
             f"{'speculation (rows/step)':<24} {'metric':<32} {'value tok/s':>11} "
             f"{'per stream tok/s':>16}  assumed (project-supplied)"]
    bound_mark = {"at_least": ">=", "at_most": "<="}
    for c, r in zip(claims, rows, strict=True):
        spec = r["spec_method"] or "?"
        if spec not in ("none", "?"):
            spec += f" ({r['spec_draft_tokens'] + 1})" if r["spec_draft_tokens"] else " (?)"
        streams = str(r["streams"]) + (f" ({r['streams_running']:g} run)"
                                       if r["streams_running"] else "")
        marks = {k: "*" if c.is_assumed(k) else "" for k in ("card", "streams",
                                                             "context_tokens", "spec_method")}
        lines.append(f"{r['id']:<34} {r['card'] + marks['card']:<8} "
                     f"{streams + marks['streams']:>13} {r['stream_relation']:<20} "
                     f"{str(r['context_tokens'] or '?') + marks['context_tokens']:>8} "
                     f"{spec + marks['spec_method']:<24} {r['metric_label']:<32} "
                     f"{bound_mark.get(r.get('bound') or '', '') + format(r['value'], 'g'):>11} "
                     f"{r['per_stream_tok_s']:>16.1f}  "
                     f"{r['assumed_fields'] or '-'}")
    lines.append("per stream = value / streams for sums (/ streams running where a server cap "
                 "or a measured average batch says fewer ran), the value itself for per-stream "
                 "metrics; rows/step = draft tokens + 1 verified per stream per step; >= and <= "
                 "mark a figure the seed gives as a bound; * and the last column: the "
                 "project's assumption, not the seed's statement")
    print("\n".join(lines))
    return 0
