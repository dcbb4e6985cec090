"""Card registry: ``data/raw/cards.csv`` and measured ceilings in ``data/raw/ceilings.csv``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from claimcheck.core.errors import InputError
from claimcheck.core.io import parse_number, read_csv_lines
from claimcheck.core.paths import RAW

CARD_NUMERIC = ("memory_gib", "memory_bw_gb_s", "bf16_dense_tflops", "fp16_dense_tflops",
                "fp8_dense_tflops", "int8_dense_tops", "fp4_dense_tflops", "default_power_w",
                "link_bw_gb_s")
CARD_REQUIRED = ("card", "name", "memory_gib", "memory_bw_gb_s", "default_power_w",
                 "source_memory", "source_bandwidth", "source_tensor", "source_power")
TENSOR_COLUMN = {"bf16": "bf16_dense_tflops", "fp16": "fp16_dense_tflops",
                 "fp8": "fp8_dense_tflops", "int8": "int8_dense_tops",
                 "fp4": "fp4_dense_tflops"}


@dataclass(frozen=True)
class Card:
    """One GPU. Memory in GiB (2**30 bytes), bandwidth in GB/s (1e9 bytes/s).

    ``nvml_name`` is NVML's exact device name string (``--card auto``); ``link`` the
    card-to-card link used for tensor parallel and ``link_bw_gb_s`` its GB/s each way."""

    card: str
    name: str
    memory_gib: float
    memory_bw_gb_s: float
    tensor_tflops: dict[str, float]
    default_power_w: float
    sources: dict[str, str]
    nvml_name: str | None = None
    link: str | None = None
    link_bw_gb_s: float | None = None
    registry: str = field(default="", compare=False)
    """The cards file this card came from (the registry or a user cards file)."""

    @property
    def link_bytes_s(self) -> float | None:
        """Card-to-card link, bytes/s each way (None when the registry has none)."""
        return None if self.link_bw_gb_s is None else self.link_bw_gb_s * 1e9

    @property
    def bandwidth_bytes_s(self) -> float:
        return self.memory_bw_gb_s * 1e9

    def tflops(self, dtype: str = "bf16") -> float:
        """Dense tensor rate for a dtype, TFLOP/s (TOP/s for int8)."""
        try:
            return self.tensor_tflops[dtype]
        except KeyError:
            raise ValueError(f"card {self.card} has no dense {dtype} rate in the registry; "
                             f"known: {sorted(self.tensor_tflops)}") from None


USER_CARDS_ENV = "CLAIMCHECK_CARDS_FILE"
"""Environment variable naming a user cards file, merged over the registry by
:func:`load_cards` wherever no file is named (set by ``--cards-file``, and by the pipeline
from ``user_cards`` in config/config.yaml, so that every rule script and notebook sees it)."""

CARD_COLUMNS_DOC = {
    "card": "registry name (lower case, no spaces), the name --card takes",
    "name": "the card's full name",
    "memory_gib": "memory in GiB (2^30 bytes) as nvidia-smi reports it",
    "memory_bw_gb_s": "memory bandwidth, GB/s (10^9 bytes/s)",
    "default_power_w": "default power limit, W",
    "source_memory": "where memory_gib comes from (a datasheet; 'assumed: ...' if supplied)",
    "source_bandwidth": "where memory_bw_gb_s comes from",
    "source_tensor": "where the *_dense_tflops / int8_dense_tops rates come from",
    "source_power": "where default_power_w comes from",
}
"""The required columns and what each holds (README "Measuring on your card")."""


def use_user_cards(path: str | Path | None) -> None:
    """Name the user cards file (None or empty: none) for every later :func:`load_cards`
    of this process and of the processes it starts (``$CLAIMCHECK_CARDS_FILE``)."""
    import os

    if path:
        os.environ[USER_CARDS_ENV] = str(path)
    else:
        os.environ.pop(USER_CARDS_ENV, None)


def _user_path(user_path: str | Path | None) -> Path | None:
    import os

    if user_path is None:
        user_path = os.environ.get(USER_CARDS_ENV) or None
    return Path(user_path) if user_path else None


def _check_row_lengths(p: Path) -> None:
    """A row with fewer fields than the header is refused naming its line and the first
    column it lacks (one line, before any value is read)."""
    import csv
    import io as _io

    from claimcheck.core.io import read_text

    reader = csv.reader(_io.StringIO(read_text(p), newline=""))
    header = next(reader, [])
    for row in reader:
        if row and len(row) < len(header):
            raise InputError(str(p), f"the row has {len(row)} fields, the header "
                             f"{len(header)}: {header[len(row)]} and after are missing",
                             line=reader.line_num, key=header[len(row)])


def _read_cards(p: Path, user: bool) -> dict[str, Card]:
    cards: dict[str, Card] = {}
    if user:
        _check_row_lengths(p)
    header, rows = read_csv_lines(p, CARD_REQUIRED)
    if user:
        known = set(CARD_NUMERIC) | set(CARD_REQUIRED) | {"nvml_name", "link"}
        extra = [c for c in header if c not in known and not c.startswith("source_")]
        if extra:
            raise InputError(str(p), f"unknown column(s) {extra}; known: "
                             f"{', '.join(sorted(known))} and source_*", line=1,
                             key=extra[0])
    for line, row in rows:
        for key in CARD_REQUIRED:
            if not (row.get(key) or "").strip():
                raise InputError(str(p), "empty", line=line, key=key)
        nums: dict[str, float] = {}
        for key in CARD_NUMERIC:
            val = (row.get(key) or "").strip()
            if val:
                nums[key] = parse_number(val, str(p), line=line, key=key)
        if user and not any(c in nums for c in TENSOR_COLUMN.values()):
            raise InputError(str(p), "no dense tensor rate: give bf16_dense_tflops (or "
                             f"another of {', '.join(TENSOR_COLUMN.values())})", line=line,
                             key="bf16_dense_tflops")
        if row["card"] in cards:
            raise InputError(str(p), f"duplicate card {row['card']!r}", line=line,
                             key="card")
        cards[row["card"]] = Card(
            card=row["card"], name=row["name"], memory_gib=nums["memory_gib"],
            memory_bw_gb_s=nums["memory_bw_gb_s"],
            tensor_tflops={d: nums[c] for d, c in TENSOR_COLUMN.items() if c in nums},
            default_power_w=nums["default_power_w"],
            sources={k: row[k] for k in row if k.startswith("source_")},
            nvml_name=(row.get("nvml_name") or "").strip() or None,
            link=(row.get("link") or "").strip() or None,
            link_bw_gb_s=nums.get("link_bw_gb_s"), registry=str(p))
        if cards[row["card"]].link_bw_gb_s is not None and not (row.get("source_link")
                                                              or "").strip():
            raise InputError(str(p), "a link bandwidth needs its source", line=line,
                             key="source_link")
    return cards


def load_cards(path: str | Path | None = None,
               user_path: str | Path | None = None) -> dict[str, Card]:
    """Read and validate the card registry, and a user cards file merged over it;
    errors name the file, line and column.

    Numbers must be finite and > 0; UTF-8 with or without a byte-order mark. The user
    file (``user_path``, else the file named by ``$CLAIMCHECK_CARDS_FILE``) has the
    registry's columns (:data:`CARD_REQUIRED` required, at least one dense tensor rate, no
    unknown column); it adds cards and never replaces one of the registry's (a card of
    that name is refused: give yours another name). Each card keeps the file it came from
    (``registry``).
    """
    p = Path(path) if path else RAW / "cards.csv"
    cards = _read_cards(p, user=False)
    up = _user_path(user_path)
    if up is None:
        return cards
    if not up.is_file():
        raise InputError(str(up), "no such file (the user cards file: --cards-file, "
                         f"user_cards in config/config.yaml or ${USER_CARDS_ENV})")
    for name, card in _read_cards(up, user=True).items():
        if name in cards:
            line = _line_of(up, name)
            raise InputError(str(up), f"card {name!r} is in {p} already: a user cards "
                             "file adds cards, it never changes the registry's; give yours "
                             "another name", line=line, key="card")
        cards[name] = card
    return cards


def _line_of(p: Path, name: str) -> int | None:
    """The line of card ``name`` in a cards file (for an error message)."""
    _, rows = read_csv_lines(p)
    return next((line for line, r in rows if r.get("card") == name), None)


def card_for_nvml_name(nvml_name: str, cards: dict[str, Card], source: str = "NVML") -> str:
    """The registry name of the card NVML calls ``nvml_name`` (exact match of the
    ``nvml_name`` column); an unknown name is refused with the name seen."""
    hits = [c.card for c in cards.values() if c.nvml_name == nvml_name]
    if len(hits) == 1:
        return hits[0]
    known = sorted(c.nvml_name for c in cards.values() if c.nvml_name)
    why = "is in the registry more than once" if hits else "is not in the registry"
    raise InputError(source, f"GPU name {nvml_name!r} {why} (cards.csv nvml_name); "
                     f"known: {', '.join(repr(k) for k in known)}", key="nvml_name")


def detect_card(gpu_names: list[str], cards: dict[str, Card], source: str = "NVML") -> str:
    """One registry card for the GPUs a run uses (their NVML names); refuses none, an
    unknown name, or a mix of cards."""
    if not gpu_names:
        raise InputError(source, "no GPU seen; --card auto needs NVML and a GPU",
                         key="card")
    found = {card_for_nvml_name(n, cards, source) for n in gpu_names}
    if len(found) > 1:
        raise InputError(source, f"the GPUs are different cards ({', '.join(sorted(found))}); "
                         "one run uses one card", key="card")
    return found.pop()


def get_card(name: str, path: str | Path | None = None,
             user_path: str | Path | None = None) -> Card:
    """One card by registry name (a user cards file merged, :func:`load_cards`); unknown
    names are refused with the known ones."""
    cards = load_cards(path, user_path)
    try:
        return cards[name]
    except KeyError:
        up = _user_path(user_path)
        where = str(path or RAW / "cards.csv") + (f" + {up}" if up else "")
        raise InputError(where, f"unknown card {name!r}; known: {', '.join(sorted(cards))}"
                         + ("" if up else " (a card of your own: --cards-file, README "
                            "'Measuring on your card')"), key="card") from None


@dataclass(frozen=True)
class Ceiling:
    """A measured compute ceiling that overrides the datasheet for a card and power limit."""

    id: str
    card: str
    power_limit_w: float | None
    dtype: str
    tflops: float
    source: str


CEILING_REQUIRED = ("id", "card", "power_limit_w", "dtype", "tflops", "source")


def load_ceilings(path: str | Path | None = None,
                  cards: dict[str, Card] | None = None) -> dict[str, Ceiling]:
    """Read ``ceilings.csv`` (measured compute ceilings); errors name the file, line and key.

    TFLOP/s and the power limit (W, may be empty) must be finite and > 0, the dtype one of
    the registry's tensor columns, ids unique, and the card known when ``cards`` is given.
    """
    p = Path(path) if path else RAW / "ceilings.csv"
    out: dict[str, Ceiling] = {}
    _, rows = read_csv_lines(p, CEILING_REQUIRED)
    for line, row in rows:
        for key in ("id", "card", "dtype", "tflops", "source"):
            if not (row.get(key) or "").strip():
                raise InputError(str(p), "empty", line=line, key=key)
        if row["id"] in out:
            raise InputError(str(p), f"duplicate ceiling id {row['id']!r}", line=line, key="id")
        if row["dtype"] not in TENSOR_COLUMN:
            raise InputError(str(p), f"{row['dtype']!r} is not one of {sorted(TENSOR_COLUMN)}",
                             line=line, key="dtype")
        if cards is not None and row["card"] not in cards:
            raise InputError(str(p), f"unknown card {row['card']!r}; known: "
                             f"{', '.join(sorted(cards))}", line=line, key="card")
        limit = (row.get("power_limit_w") or "").strip()
        out[row["id"]] = Ceiling(
            id=row["id"], card=row["card"],
            power_limit_w=parse_number(limit, str(p), line=line, key="power_limit_w")
            if limit else None,
            dtype=row["dtype"], tflops=parse_number(row["tflops"], str(p), line=line,
                                                    key="tflops"),
            source=row["source"])
    return out
