"""YAML files read and validated by a JSON schema (:mod:`claimcheck.config.yamlcfg` parses
and checks; this reads): a missing file, a directory and text that is not UTF-8 are refused
naming the file, everything else as the parser says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from claimcheck.config.yamlcfg import check_config, check_unique_text, parse_validated
from claimcheck.files.readers import read_schema, read_text


def load_validated(path: str | Path, schema_name: str) -> dict[str, Any]:
    """The YAML file at ``path``, parsed and validated against the schema shipped as
    ``claimcheck/schemas/SCHEMA_NAME.schema.json``; every problem is one
    :class:`~claimcheck.files.errors.InputError` naming the file, line and key."""
    p = Path(path)
    return parse_validated(read_text(p), str(p), read_schema(schema_name))


def check_unique_keys(path: str | Path) -> None:
    """Refuse a YAML file with a key given twice in one mapping, naming the file and line."""
    p = Path(path)
    check_unique_text(read_text(p), str(p))


def validate_config(data: Any, schema_path: str | Path, files: list[str | Path]) -> None:
    """Validate a loaded config (a pipeline's, merged from ``files``) against a YAML JSON
    schema (:func:`claimcheck.config.yamlcfg.check_config`: the error names the file, line
    and key path)."""
    check_config(data, yaml.safe_load(read_text(schema_path)),
                 lambda: [(str(f), read_text(f)) for f in files])
