"""The offline bundle's plan, worked out from a lock file and the image's package list.

Pure: text in, a :class:`Plan` out. A lock entry is carried ("ship", or "shadow" where the
image has the name at another version and the rules say the lock's must win) when serving
needs it and the image lacks it at the lock's version; every other entry is given its
reason ("image", "image-kept", "excluded", "unneeded"). Sizes are bytes; MiB = 2**20 bytes.
The I/O (download, hash check, split, install) is :mod:`claimcheck.envs.offline`.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass

from claimcheck.files.errors import InputError

MIB = 2**20
TAR_BLOCK = 512
TAR_RECORD = 20 * TAR_BLOCK  # tarfile's RECORDSIZE: a stream is padded to a whole record
CARRIED = ("ship", "shadow")

_ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+?)\s*(\\)?\s*$")
_HASH = re.compile(r"^\s+--hash=sha256:([0-9a-f]{64})\s*(\\)?\s*$")
_VIA = re.compile(r"^\s+#\s+via(?:\s+(.*))?$")
_VIA_MORE = re.compile(r"^\s+#\s{3}(\S.*)$")
_IMAGE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:==(\S+))?"
                    r"\s+#\s*(seen|assumed|listed):\s*(.+)$")
ROOT = "-r req.in"


def canonical(name: str) -> str:
    """PEP 503 name: lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def public_version(version: str) -> str:
    """A version without its local label (``2.11.0+cu130`` -> ``2.11.0``)."""
    return version.split("+", 1)[0]


@dataclass(frozen=True)
class LockEntry:
    """One pinned package of a lock file: its sha256 hashes and the packages that need it."""

    name: str
    version: str
    hashes: tuple[str, ...]
    via: tuple[str, ...]
    line: int


@dataclass(frozen=True)
class ImagePackage:
    """One installed package of the image; ``version`` None when it was not read."""

    name: str
    version: str | None
    source: str  # "seen", "assumed" or "listed"
    note: str
    line: int


@dataclass(frozen=True)
class Rules:
    """bundle-rules.toml: names never carried, names shadowed, the transfer's sizes (MiB)."""

    exclude: dict[str, str]
    shadow: dict[str, str]
    limit_mib: float
    headroom_mib: float


@dataclass(frozen=True)
class Decision:
    """What the bundle does with one lock entry, and why."""

    name: str
    version: str
    action: str  # ship | shadow | image | image-kept | excluded | unneeded
    reason: str
    hashes: tuple[str, ...]
    image_version: str | None = None


@dataclass(frozen=True)
class Plan:
    """Every lock entry's decision, in the lock's order."""

    lock: str
    decisions: tuple[Decision, ...]

    @property
    def wheels(self) -> tuple[Decision, ...]:
        """The entries the bundle carries (ship and shadow)."""
        return tuple(d for d in self.decisions if d.action in CARRIED)

    def by_action(self, action: str) -> tuple[Decision, ...]:
        return tuple(d for d in self.decisions if d.action == action)


def parse_lock(text: str, source: str) -> dict[str, LockEntry]:
    """A ``uv pip compile --generate-hashes`` file: ``name==version \\``, its
    ``--hash=sha256:`` lines and its ``# via`` comment (one line or a list)."""
    entries: dict[str, LockEntry] = {}
    cur: dict | None = None
    in_via = False

    def close() -> None:
        if cur is None:
            return
        if not cur["hashes"]:
            raise InputError(source, "no --hash=sha256 line", line=cur["line"], key=cur["name"])
        if not cur["via"]:
            raise InputError(source, "no '# via' comment (what needs it)", line=cur["line"],
                             key=cur["name"])
        entries[cur["name"]] = LockEntry(cur["name"], cur["version"], tuple(cur["hashes"]),
                                         tuple(cur["via"]), cur["line"])

    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip() or (raw.startswith("#") and cur is None):
            continue
        m = _ENTRY.match(raw)
        if m:
            close()
            name = canonical(m.group(1))
            if name in entries:
                raise InputError(source, "pinned twice", line=n, key=name)
            cur = {"name": name, "version": m.group(2), "hashes": [], "via": [], "line": n}
            in_via = False
            continue
        if cur is None:
            raise InputError(source, f"expected 'name==version', got {raw.strip()!r}", line=n)
        if (h := _HASH.match(raw)):
            cur["hashes"].append(h.group(1))
        elif (v := _VIA.match(raw)):
            in_via = v.group(1) is None
            if v.group(1):
                cur["via"].append(v.group(1).strip())
        elif in_via and (v := _VIA_MORE.match(raw)):
            cur["via"].append(v.group(1).strip())
        elif raw.lstrip().startswith("#"):
            in_via = False
        else:
            raise InputError(source, f"unreadable line {raw.strip()!r}", line=n, key=cur["name"])
    close()
    if not entries:
        raise InputError(source, "no pinned packages")
    for e in entries.values():
        for parent in e.via:
            if parent != ROOT and canonical(parent) not in entries:
                raise InputError(source, f"'# via {parent}' names a package the lock does not pin",
                                 line=e.line, key=e.name)
    return entries


def parse_image(text: str, source: str) -> dict[str, ImagePackage]:
    """image-cuda.txt: ``NAME[==VERSION]  # seen|assumed|listed: NOTE`` a line."""
    out: dict[str, ImagePackage] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip() or raw.startswith("#"):
            continue
        m = _IMAGE.match(raw.strip())
        if not m:
            raise InputError(source, "expected 'NAME[==VERSION]  # seen|assumed|listed: NOTE'",
                             line=n)
        name, version, kind, note = canonical(m.group(1)), m.group(2), m.group(3), m.group(4)
        if (version is None) != (kind == "listed"):
            raise InputError(source, f"'{kind}' needs {'no' if kind == 'listed' else 'a'} "
                             "==VERSION", line=n, key=name)
        if name in out:
            raise InputError(source, "listed twice", line=n, key=name)
        out[name] = ImagePackage(name, version, kind, note.strip(), n)
    return out


def parse_rules(text: str, source: str) -> Rules:
    """bundle-rules.toml: [exclude] and [shadow] tables of name = reason; [transfer] sizes."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(source, f"not TOML: {e}") from None
    extra = set(data) - {"exclude", "shadow", "transfer"}
    if extra:
        raise InputError(source, f"unknown tables {sorted(extra)}")
    tables = {}
    for key in ("exclude", "shadow"):
        table = data.get(key, {})
        for name, reason in table.items():
            if not isinstance(reason, str) or not reason.strip():
                raise InputError(source, "needs a reason (a non-empty string)", key=f"{key}.{name}")
        tables[key] = {canonical(k): v for k, v in table.items()}
    both = set(tables["exclude"]) & set(tables["shadow"])
    if both:
        raise InputError(source, f"both excluded and shadowed: {sorted(both)}")
    t = data.get("transfer", {})
    for key in ("limit_mib", "headroom_mib"):
        if not isinstance(t.get(key), (int, float)) or t[key] < 0:
            raise InputError(source, "needs a number >= 0", key=f"transfer.{key}")
    return Rules(tables["exclude"], tables["shadow"], float(t["limit_mib"]),
                 float(t["headroom_mib"]))


def plan_bundle(lock: dict[str, LockEntry], image: dict[str, ImagePackage], rules: Rules,
                lock_source: str = "lock", image_source: str = "image") -> Plan:
    """Each lock entry's decision. An entry is needed when a chain of ``# via`` parents
    from the lock's root reaches it without passing an excluded entry or one the image
    provides (whose own needs are the image's); a shadowed entry passes its needs on."""
    for name in rules.shadow:
        pkg = image.get(name)
        if name in lock and pkg is not None and pkg.version is None:
            raise InputError(image_source, "its version was not read, but bundle-rules.toml "
                             "shadows it: the plan cannot tell whether the image's will do",
                             line=pkg.line, key=name)

    def provided(e: LockEntry) -> tuple[str, str, str | None] | None:
        """(action, reason, image version) when the image stands in for the entry."""
        pkg = image.get(e.name)
        if pkg is None:
            return None
        if pkg.version is not None and public_version(pkg.version) == public_version(e.version):
            return "image", f"image has {pkg.version} ({pkg.source}: {pkg.note})", pkg.version
        if e.name in rules.shadow:
            return None
        have = pkg.version or "an unread version"
        return ("image-kept", f"image's {have} kept ({pkg.source}: {pkg.note}); lock pins "
                f"{e.version}", pkg.version)

    children: dict[str, list[str]] = {}
    for e in lock.values():
        for parent in e.via:
            children.setdefault(ROOT if parent == ROOT else canonical(parent), []).append(e.name)
    if ROOT not in children:
        raise InputError(lock_source, f"no entry is '# via {ROOT}': the lock's root is unknown")
    needed: set[str] = set()
    todo = list(children[ROOT])
    while todo:
        name = todo.pop()
        if name in needed:
            continue
        needed.add(name)
        e = lock[name]
        if name in rules.exclude or provided(e) is not None:
            continue
        todo.extend(children.get(name, []))

    decisions = []
    for e in lock.values():
        pkg = image.get(e.name)
        if e.name in rules.exclude:
            d = Decision(e.name, e.version, "excluded", rules.exclude[e.name], e.hashes)
        elif (p := provided(e)) is not None:
            d = Decision(e.name, e.version, p[0], p[1], e.hashes, p[2])
        elif e.name not in needed:
            d = Decision(e.name, e.version, "unneeded", "needed only by " + ", ".join(
                sorted(canonical(v) for v in e.via)), e.hashes)
        elif pkg is not None:
            d = Decision(e.name, e.version, "shadow", f"shadows the image's {pkg.version} "
                         f"({pkg.source}): {rules.shadow[e.name]}", e.hashes, pkg.version)
        else:
            d = Decision(e.name, e.version, "ship", "not in the image", e.hashes)
        decisions.append(d)
    return Plan(lock_source, tuple(decisions))


def part_bytes(checkout_bytes: int, rules: Rules) -> int:
    """Bytes of one bundle part, a whole number of MiB: what one transfer (limit) leaves
    beside the checkout and the headroom. Raises when less than 1 MiB is left."""
    left = rules.limit_mib * MIB - checkout_bytes - rules.headroom_mib * MIB
    mib = math.floor(left / MIB)
    if mib < 1:
        raise InputError("bundle-rules.toml", f"a {rules.limit_mib:g} MiB transfer leaves "
                         f"{left / MIB:.1f} MiB beside a {checkout_bytes / MIB:.1f} MiB checkout "
                         f"and {rules.headroom_mib:g} MiB headroom", key="transfer")
    return mib * MIB


def tar_bytes(members: list[tuple[str, int]]) -> int:
    """Bytes of an uncompressed pax tar stream (tarfile's default) of regular files given as
    (ASCII name, size): a 512-byte header and the data padded to 512 each; a name over 100
    characters adds a pax header of two blocks (its record fits in one); two zero blocks
    end it, padded to a 10,240-byte record."""
    body = 0
    for name, size in members:
        if len(name) > 100:
            if len(name) > 400 or not name.isascii():
                raise ValueError(f"tar_bytes: {name!r} needs a longer pax record")
            body += 2 * TAR_BLOCK
        body += TAR_BLOCK + math.ceil(size / TAR_BLOCK) * TAR_BLOCK
    return math.ceil((body + 2 * TAR_BLOCK) / TAR_RECORD) * TAR_RECORD


def part_count(total_bytes: int, part: int) -> int:
    """Parts (= transfer calls) that carry ``total_bytes`` in parts of ``part`` bytes."""
    return math.ceil(total_bytes / part)


def install_action(name: str, version: str, image_version: str | None,
                   shadow: bool) -> tuple[str, str]:
    """On the host: ("install" | "skip" | "refuse", why) for one carried wheel, given the
    version the image has installed (None: not installed) and whether the plan shadows it."""
    if image_version is None:
        return "install", f"{name} {version}: not in the image"
    if public_version(image_version) == public_version(version):
        return "skip", f"{name} {version}: the image has it already ({image_version})"
    if shadow:
        return "install", (f"{name} {version}: shadows the image's {image_version} "
                           "(the plan says it must)")
    return "refuse", (f"{name} {version}: the image has {image_version} and the plan does not "
                      "shadow it; installing it would replace the image's package")
