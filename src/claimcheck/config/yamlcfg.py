"""YAML text validated by a JSON schema; errors name the source, line and key path. Pure:
the files and the schemas are read by :mod:`claimcheck.config.yamlfiles`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsonschema
import yaml

from claimcheck.files.errors import InputError
from claimcheck.files.names import NAME_PATTERN, name_words


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


def parse_validated(text: str, source: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Parse YAML ``text`` read from ``source`` and validate it against ``schema``; raise
    :class:`InputError` on any problem.

    A YAML syntax error, a key given twice in one mapping, an empty text and a schema
    violation are each refused naming the source and, when known, the line and key.
    """
    try:
        data = safe_load_unique(text)
        node = yaml.compose(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise InputError(source, f"not valid YAML: {getattr(e, 'problem', e)}",
                         line=mark.line + 1 if mark else None) from None
    if data is None:
        raise InputError(source, "file is empty")
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        path_list = list(e.absolute_path)
        message = e.message
        if e.validator_value == NAME_PATTERN and isinstance(e.instance, str):
            # a key that is not a name (an engine's, a protocol's): its own line, the words
            what = str(path_list[-1]).removesuffix("s") if path_list else "the"
            path_list.append(e.instance)
            message = name_words(e.instance, what) or message
        key = ".".join(str(k) for k in path_list) or "(top level)"
        raise InputError(source, message, line=_line_of(node, path_list), key=key)
    return data


def key_path(path: list[Any]) -> str:
    """``["rooflines", 0, "card"]`` as ``rooflines[0].card`` (top level: ``(top level)``)."""
    out = ""
    for k in path:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
    return out or "(top level)"


def check_unique_text(text: str, source: str) -> None:
    """Refuse YAML text with a key given twice in one mapping (PyYAML, and so Snakemake's
    ``configfile:``, would keep the last without a word), naming the source and line."""
    try:
        safe_load_unique(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise InputError(source, f"not valid YAML: {getattr(e, 'problem', e)}",
                         line=mark.line + 1 if mark else None) from None


def check_config(data: Any, schema: dict[str, Any],
                 texts: Callable[[], list[tuple[str, str]]]) -> None:
    """Validate a loaded config (a pipeline's, merged from several files) against a JSON
    schema; the first error is one :class:`InputError` naming the file, line and key path
    (``rooflines[0].max_streams``), never a raw ValidationError. ``texts``: the config
    files' (name, text), first to last, asked for only on an error (the last file that
    holds the key gave its value)."""
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if not errors:
        return
    e = errors[0]
    files = texts()
    where, line = (files[-1][0] if files else "config"), None
    for name, text in reversed(files):
        node = yaml.compose(text)
        if node is not None and _holds(node, list(e.absolute_path)):
            where, line = name, _line_of(node, list(e.absolute_path))
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
