"""The measuring configuration read: the protocols (``config/protocols.yaml``: protocols and
their CI profiles) and the engines (``config/engines.yaml``), each file validated by its
schema and handed to the pure builders (:func:`claimcheck.config.protocols.protocols_from_data`,
:func:`claimcheck.config.engines.engines_from_data`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from claimcheck.config.engines import Engine, engines_from_data
from claimcheck.config.protocols import Protocol, model_terms, protocols_from_data, scaled_protocol
from claimcheck.config.yamlfiles import load_validated
from claimcheck.files import paths
from claimcheck.files.errors import InputError
from claimcheck.files.paths import CONFIG


def load_protocols(path: str | Path | None = None) -> dict[str, Protocol]:
    """Read and validate protocols.yaml (default config/protocols.yaml)."""
    p = Path(path) if path else CONFIG / "protocols.yaml"
    return protocols_from_data(load_validated(p, "protocols"), str(p))


def load_model_terms(path: str | Path | None = None) -> dict[str, frozenset[str]]:
    """:func:`claimcheck.config.protocols.model_terms` of protocols.yaml (default
    config/protocols.yaml) as it is now, read at each call: a committed run's snapshot may
    predate ``model_term``, so the current file decides which steps calibrate a term."""
    return model_terms(load_protocols(path))


def load_profiles(path: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """The CI profiles of protocols.yaml (default config/protocols.yaml)."""
    p = Path(path) if path else CONFIG / "protocols.yaml"
    return load_validated(p, "protocols").get("profiles", {})


def get_protocol(name: str, path: str | Path | None = None,
                 profile: str | None = None) -> Protocol:
    """One protocol by name (optionally scaled by a profile); unknown names are refused."""
    src = str(path or CONFIG / "protocols.yaml")
    return scaled_protocol(load_protocols(path), load_profiles(path) if profile else {},
                           name, src, profile)


def load_vllm_env(path: str | Path | None = None) -> dict[str, str]:
    """The ``VLLM_*`` variables a multi-GPU engine may run with, each with its reason
    (validated; :func:`claimcheck.config.vllmenv.unknown_refusal`). Default: the checkout's
    config/vllm_env.yaml (:data:`paths.CONFIG`, not beside an engines file given elsewhere),
    and none allowed where that file is absent (a checkout made without it allows nothing:
    the strict side); a ``path`` given must exist."""
    if path is None:
        p = paths.CONFIG / "vllm_env.yaml"
        if not p.exists():
            return {}
    else:
        p = Path(path)
    return dict(load_validated(p, "vllm_env")["allowed"])


def load_engines(path: str | Path | None = None) -> dict[str, Engine]:
    """Every engine of ``path`` (default config/engines.yaml), validated and checked with
    the ``VLLM_*`` variables config/vllm_env.yaml allows (:func:`load_vllm_env`)."""
    p = Path(path) if path else CONFIG / "engines.yaml"
    return engines_from_data(load_validated(p, "engines"), str(p), load_vllm_env())


def get_engine(name: str, path: str | Path | None = None) -> Engine:
    """One engine by name; unknown names are refused with the known ones."""
    src = str(path or CONFIG / "engines.yaml")
    engines = load_engines(path)
    if name not in engines:
        raise InputError(src, f"unknown engine {name!r}; known: {', '.join(sorted(engines))}",
                         key="engines")
    return engines[name]
