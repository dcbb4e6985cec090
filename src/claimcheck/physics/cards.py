"""Card registry: ``data/raw/cards.csv`` and measured ceilings in ``data/raw/ceilings.csv``,
as typed records from their rows (pure: the files are read by :mod:`claimcheck.physics.cardfiles`;
every error names the file, line and column)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass, field

from claimcheck.files.errors import InputError
from claimcheck.files.io import Rows, parse_number
from claimcheck.files.names import NAME_RULE, name_words, near_name

CARD_NUMERIC = ("memory_gib", "memory_bw_gb_s", "bf16_dense_tflops", "fp16_dense_tflops",
                "fp8_dense_tflops", "int8_dense_tops", "fp4_dense_tflops", "default_power_w",
                "link_bw_gb_s", "tensor_clock_mhz")
CARD_REQUIRED = ("card", "name", "memory_gib", "memory_bw_gb_s", "default_power_w",
                 "source_memory", "source_bandwidth", "source_tensor", "source_power")
CARD_MAX = {"memory_gib": (1e4, "GiB"), "memory_bw_gb_s": (1e5, "GB/s"),
            "bf16_dense_tflops": (1e6, "TFLOP/s"), "fp16_dense_tflops": (1e6, "TFLOP/s"),
            "fp8_dense_tflops": (1e6, "TFLOP/s"), "int8_dense_tops": (1e6, "TOP/s"),
            "fp4_dense_tflops": (1e6, "TFLOP/s"), "default_power_w": (1e4, "W"),
            "link_bw_gb_s": (1e5, "GB/s"), "tensor_clock_mhz": (1e4, "MHz")}
"""The most a cards file may say of one card, far beyond any GPU (the B200 of the registry:
180 GiB, 8,000 GB/s, 9,000 dense FP4 TFLOP/s, 1,000 W): a value above it is a typo or a unit
slip (1e300 GiB, bandwidth in B/s), refused naming its cell before any sum overflows."""
ARCHES = ("ampere", "ada", "hopper", "blackwell")
"""The GPU architectures an ``arch`` cell may name (a kernel's native architectures are
matched against it: :data:`claimcheck.physics.formats.KERNEL_ARCH`)."""
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
    arch: str | None = None
    """The GPU architecture (one of :data:`ARCHES`), where the cards file gives one."""
    tensor_clock_mhz: float | None = None
    """The SM clock, MHz, at which the datasheet's dense tensor rates are quoted (SMs x
    FLOP per SM per clock x this clock = the rate), where the cards file gives one: the
    clock a compute share measured at another clock is scaled to (claimcheck.predict.carry)."""
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
"""The required columns and what each holds (docs/own-card.md)."""


def check_row_lengths(text: str, source: str) -> None:
    """A row with fewer fields than the header is refused naming its line and the first
    column it lacks (one line, before any value is read; a user cards file's text)."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, [])
    for row in reader:
        if row and len(row) < len(header):
            raise InputError(source, f"the row has {len(row)} fields, the header "
                             f"{len(header)}: {header[len(row)]} and after are missing",
                             line=reader.line_num, key=header[len(row)])


def parse_cards(header: list[str], rows: Rows, source: str, user: bool,
                taken: Iterable[str] = ()) -> dict[str, Card]:
    """The cards of a cards file's rows (``header``, (line, row) pairs, read from
    ``source``): numbers finite and > 0, the required columns filled, ids unique, each
    ``card`` a name (:func:`claimcheck.files.names.name_refusal`). A user file (``user``)
    may hold no unknown column and needs a dense tensor rate; a card of it that differs
    from one of ``taken`` (the registry's names) only by case or spaces is refused so."""
    p = source
    cards: dict[str, Card] = {}
    if user:
        known = set(CARD_NUMERIC) | set(CARD_REQUIRED) | {"nvml_name", "link", "arch"}
        extra = [c for c in header if c not in known and not c.startswith("source_")]
        if extra:
            raise InputError(p, f"unknown column(s) {extra}; known: "
                             f"{', '.join(sorted(known))} and source_*", line=1,
                             key=extra[0])
    for line, row in rows:
        for key in CARD_REQUIRED:
            if not (row.get(key) or "").strip():
                raise InputError(p, "empty", line=line, key=key)
        _check_name(row["card"], taken, p, line)
        nums: dict[str, float] = {}
        for key in CARD_NUMERIC:
            val = (row.get(key) or "").strip()
            if val:
                nums[key] = parse_number(val, p, line=line, key=key)
                most, unit = CARD_MAX[key]
                if nums[key] > most:
                    raise InputError(p, f"{val} {unit} is beyond any card (at most {most:,.0f} "
                                     f"{unit}): a typo or another unit?", line=line, key=key)
        if user and not any(c in nums for c in TENSOR_COLUMN.values()):
            raise InputError(p, "no dense tensor rate: give bf16_dense_tflops (or "
                             f"another of {', '.join(TENSOR_COLUMN.values())})", line=line,
                             key="bf16_dense_tflops")
        arch = (row.get("arch") or "").strip() or None
        if arch is not None and arch not in ARCHES:
            raise InputError(p, f"architecture {arch!r} is not one of {', '.join(ARCHES)}",
                             line=line, key="arch")
        if row["card"] in cards:
            raise InputError(p, f"duplicate card {row['card']!r}", line=line,
                             key="card")
        cards[row["card"]] = Card(
            card=row["card"], name=row["name"], memory_gib=nums["memory_gib"],
            memory_bw_gb_s=nums["memory_bw_gb_s"],
            tensor_tflops={d: nums[c] for d, c in TENSOR_COLUMN.items() if c in nums},
            default_power_w=nums["default_power_w"],
            sources={k: row[k] for k in row if k.startswith("source_")},
            nvml_name=(row.get("nvml_name") or "").strip() or None,
            link=(row.get("link") or "").strip() or None,
            link_bw_gb_s=nums.get("link_bw_gb_s"), arch=arch,
            tensor_clock_mhz=nums.get("tensor_clock_mhz"), registry=p)
        if cards[row["card"]].link_bw_gb_s is not None and not (row.get("source_link")
                                                              or "").strip():
            raise InputError(p, "a link bandwidth needs its source", line=line,
                             key="source_link")
        if "tensor_clock_mhz" in nums and not (row.get("source_tensor_clock") or "").strip():
            raise InputError(p, "a tensor clock needs its source", line=line,
                             key="source_tensor_clock")
    return cards


def _check_name(name: str, taken: Iterable[str], source: str, line: int) -> None:
    """A ``card`` cell that is not a name refused (its file, line and column); one that
    differs from a registry name only by case or spaces said so."""
    why = name_words(name, "card")
    if why is None:
        return
    near = near_name(name, taken)
    if near is not None:
        why = (f"card name {name!r} differs from the registry's {near!r} only by case or "
               "spaces: a user cards file adds cards, it never changes the registry's; "
               f"give yours another name ({NAME_RULE})")
    raise InputError(source, why, line=line, key="card")


def merge_user_cards(cards: dict[str, Card], user: dict[str, Card], user_rows: Rows,
                     registry_source: str, user_source: str) -> dict[str, Card]:
    """The registry's cards with a user cards file's added; a user card of a registry
    card's name is refused (a user file adds cards, it never changes the registry's)."""
    out = dict(cards)
    for name, card in user.items():
        if name in out:
            line = next((ln for ln, r in user_rows if r.get("card") == name), None)
            raise InputError(user_source, f"card {name!r} is in {registry_source} already: "
                             "a user cards file adds cards, it never changes the "
                             "registry's; give yours another name", line=line, key="card")
        out[name] = card
    return out


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


def parse_ceilings(rows: Rows, source: str,
                   cards: dict[str, Card] | None = None) -> dict[str, Ceiling]:
    """The measured ceilings of ``ceilings.csv``'s rows (read from ``source``); errors name
    the file, line and key.

    TFLOP/s and the power limit (W, may be empty) must be finite and > 0, the dtype one of
    the registry's tensor columns, ids unique, and the card known when ``cards`` is given.
    """
    p = source
    out: dict[str, Ceiling] = {}
    for line, row in rows:
        for key in ("id", "card", "dtype", "tflops", "source"):
            if not (row.get(key) or "").strip():
                raise InputError(p, "empty", line=line, key=key)
        if row["id"] in out:
            raise InputError(p, f"duplicate ceiling id {row['id']!r}", line=line, key="id")
        if row["dtype"] not in TENSOR_COLUMN:
            raise InputError(p, f"{row['dtype']!r} is not one of {sorted(TENSOR_COLUMN)}",
                             line=line, key="dtype")
        if cards is not None and row["card"] not in cards:
            raise InputError(p, f"unknown card {row['card']!r}; known: "
                             f"{', '.join(sorted(cards))}", line=line, key="card")
        limit = (row.get("power_limit_w") or "").strip()
        out[row["id"]] = Ceiling(
            id=row["id"], card=row["card"],
            power_limit_w=parse_number(limit, p, line=line, key="power_limit_w")
            if limit else None,
            dtype=row["dtype"], tflops=parse_number(row["tflops"], p, line=line,
                                                    key="tflops"),
            source=row["source"])
    return out
