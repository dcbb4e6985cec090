"""YAML files validated by a JSON schema; errors name the file, line and key path."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from claimcheck.core.errors import InputError
from claimcheck.core.io import read_schema, read_text


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses a key given twice in one mapping (PyYAML keeps the last)."""


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode,
                              deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        line = key_node.start_mark.line + 1
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first given on line {seen[key]})",
                key_node.start_mark)
        seen[key] = line
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                                 _construct_unique_mapping)


def safe_load_unique(text: str) -> Any:
    """``yaml.safe_load`` that refuses duplicate keys (raises a YAMLError with the line)."""
    return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader subclass)


@cache
def schema(name: str) -> dict[str, Any]:
    """A JSON schema shipped in ``claimcheck/schemas/NAME.schema.json`` (through core.io)."""
    return read_schema(name)


def _line_of(node: yaml.Node, path: list[Any]) -> int | None:
    """1-based line of the node at ``path`` (or the deepest parent found)."""
    line = node.start_mark.line + 1
    for key in path:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == str(key):
                    line, node = k.start_mark.line + 1, v
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(
                node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def load_validated(path: str | Path, schema_name: str) -> dict[str, Any]:
    """Parse YAML at ``path`` and validate it; raise :class:`InputError` on any problem.

    A missing file, a directory, text that is not UTF-8 (a byte-order mark is allowed), a
    YAML syntax error, a key given twice in one mapping and a schema violation are each
    refused naming the file and, when known, the line and key.
    """
    p = Path(path)
    text = read_text(p)
    try:
        data = safe_load_unique(text)
        node = yaml.compose(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise InputError(str(p), f"not valid YAML: {getattr(e, 'problem', e)}",
                         line=mark.line + 1 if mark else None) from None
    if data is None:
        raise InputError(str(p), "file is empty")
    validator = jsonschema.Draft202012Validator(schema(schema_name))
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        path_list = list(e.absolute_path)
        key = ".".join(str(k) for k in path_list) or "(top level)"
        raise InputError(str(p), e.message, line=_line_of(node, path_list), key=key)
    return data


def key_path(path: list[Any]) -> str:
    """``["rooflines", 0, "card"]`` as ``rooflines[0].card`` (top level: ``(top level)``)."""
    out = ""
    for k in path:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
    return out or "(top level)"


def check_unique_keys(path: str | Path) -> None:
    """Refuse a YAML file with a key given twice in one mapping (PyYAML, and so Snakemake's
    ``configfile:``, would keep the last without a word), naming the file and line."""
    p = Path(path)
    try:
        safe_load_unique(read_text(p))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise InputError(str(p), f"not valid YAML: {getattr(e, 'problem', e)}",
                         line=mark.line + 1 if mark else None) from None


def validate_config(data: Any, schema_path: str | Path, files: list[str | Path]) -> None:
    """Validate a loaded config (a pipeline's, merged from ``files``) against a YAML JSON
    schema; the first error is one :class:`InputError` naming the file, line and key path
    (``rooflines[0].max_streams``), never a raw ValidationError."""
    sch = yaml.safe_load(read_text(schema_path))
    validator = jsonschema.Draft202012Validator(sch)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if not errors:
        return
    e = errors[0]
    where, line = (str(files[-1]) if files else "config"), None
    for f in reversed(files):  # the last file that holds the key gave its value
        node = yaml.compose(read_text(f))
        if node is not None and _holds(node, list(e.absolute_path)):
            where, line = str(f), _line_of(node, list(e.absolute_path))
            break
    raise InputError(where, e.message, line=line, key=key_path(list(e.absolute_path)))


def _holds(node: yaml.Node, path: list[Any]) -> bool:
    """Whether the YAML node tree has ``path`` (mapping keys and sequence indices)."""
    for key in path:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if k.value == str(key)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(
                node.value):
            node = node.value[key]
        else:
            return False
        if node is None:
            return False
    return True
