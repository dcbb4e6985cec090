"""Published load protocols (``config/protocols.yaml``) as data."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from claimcheck.core.errors import InputError
from claimcheck.core.paths import CONFIG
from claimcheck.core.yamlcfg import load_validated


@dataclass(frozen=True)
class Step:
    """One concurrency level: ``streams`` requests in flight, ``requests`` in all."""

    streams: int
    requests: int


@dataclass(frozen=True)
class Protocol:
    name: str
    description: str
    source_claims: tuple[str, ...]
    metrics: tuple[str, ...]
    dataset: str
    input_len: int
    output_len: int
    ignore_eos: bool
    seed: str | int
    repeats: int
    report: str
    endpoint: str
    steps: tuple[Step, ...]

    @property
    def context_tokens(self) -> int:
        """Context per stream at the end of a request: prompt + output tokens."""
        return self.input_len + self.output_len

    def scaled(self, profile: dict[str, Any]) -> Protocol:
        """A copy scaled by a profile (CI): fewer streams, requests and tokens."""
        cap = profile.get("max_streams")
        per = profile.get("requests_per_stream")
        steps = []
        for s in self.steps:
            n = min(s.streams, cap) if cap else s.streams
            steps.append(Step(n, n * per if per else s.requests))
        return replace(self, steps=tuple(dict.fromkeys(steps)),
                       input_len=profile.get("input_len", self.input_len),
                       output_len=profile.get("output_len", self.output_len))


def load_protocols(path: str | Path | None = None) -> dict[str, Protocol]:
    """Read and validate protocols.yaml."""
    p = Path(path) if path else CONFIG / "protocols.yaml"
    data = load_validated(p, "protocols")
    out = {}
    for name, d in data["protocols"].items():
        out[name] = Protocol(
            name=name, description=" ".join(d["description"].split()),
            source_claims=tuple(d["source_claims"]), metrics=tuple(d["metrics"]),
            dataset=d["dataset"], input_len=d["input_len"], output_len=d["output_len"],
            ignore_eos=d.get("ignore_eos", True), seed=d.get("seed", "fresh"),
            repeats=d.get("repeats", 1), report=d.get("report", "last"),
            endpoint=d.get("endpoint", "/v1/completions"),
            steps=tuple(Step(**s) for s in d["steps"]))
    return out


def load_profiles(path: str | Path | None = None) -> dict[str, dict[str, Any]]:
    p = Path(path) if path else CONFIG / "protocols.yaml"
    return load_validated(p, "protocols").get("profiles", {})


def get_protocol(name: str, path: str | Path | None = None,
                 profile: str | None = None) -> Protocol:
    """One protocol by name (optionally scaled by a profile); unknown names are refused."""
    src = str(path or CONFIG / "protocols.yaml")
    protos = load_protocols(path)
    if name not in protos:
        raise InputError(src, f"unknown protocol {name!r}; known: {', '.join(sorted(protos))}",
                         key="protocols")
    proto = protos[name]
    if profile:
        profiles = load_profiles(path)
        if profile not in profiles:
            raise InputError(src, f"unknown profile {profile!r}; known: "
                             f"{', '.join(sorted(profiles)) or 'none'}", key="profiles")
        proto = proto.scaled(profiles[profile])
    return proto


def check_source_claims(protos: dict[str, Protocol], claim_ids: set[str], src: str) -> None:
    """Every protocol's source_claims must exist in the claims registry."""
    for p in protos.values():
        missing = [c for c in p.source_claims if c not in claim_ids]
        if missing:
            raise InputError(src, f"unknown claim ids {missing}",
                             key=f"protocols.{p.name}.source_claims")
