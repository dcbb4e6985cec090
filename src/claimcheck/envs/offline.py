"""The offline bundle's I/O: download the planned wheels, check them against the lock,
pack them into parts that fit one transfer beside the checkout; on the GPU host, check the
parts and install into a separate target. Sizes in bytes; MiB = 2**20 bytes.

Stdlib only: the install half runs on the GPU host with the checkout's ``src`` on the path.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from claimcheck.envs.bundle import (
    MIB,
    Decision,
    Plan,
    Rules,
    canonical,
    install_action,
    parse_image,
    parse_lock,
    parse_rules,
    part_bytes,
    part_count,
    plan_bundle,
    public_version,
    tar_bytes,
)
from claimcheck.files.errors import InputError

# The host image's glibc is newer than 2.35 (Python 3.12.3 on Ubuntu 24.04: 2.39, assumed);
# pip matches each tag exactly, so every manylinux_2_N up to 2_39 is named.
PLATFORMS = tuple(f"manylinux_2_{n}_x86_64" for n in range(39, 16, -1)) + (
    "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64")
PLAN_NAME = "plan.json"
SUMS_NAME = "SUMS"
PART_PREFIX = "part"


def load_plan(lock: str | Path, image: str | Path, rules: str | Path) -> tuple[Plan, Rules]:
    """Read the three inputs and plan (errors name the file and line)."""
    r = parse_rules(Path(rules).read_text(), str(rules))
    p = plan_bundle(parse_lock(Path(lock).read_text(), str(lock)),
                    parse_image(Path(image).read_text(), str(image)), r,
                    lock_source=str(lock), image_source=str(image))
    return p, r


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def checkout_bytes(root: Path) -> int:
    """Bytes of what travels with a call: tracked and untracked-not-ignored files, and the
    folder shared/ where the checkout has one (carried paths come on top)."""
    out = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=root,
                         check=True, capture_output=True).stdout.decode()
    total = 0
    for rel in filter(None, out.split("\0")):
        p = root / rel
        if p.is_symlink() or p.is_file():
            total += p.lstat().st_size
    shared = root / "shared"
    if shared.is_dir():
        total += sum(f.lstat().st_size for f in shared.rglob("*") if f.is_file())
    return total


def wheel_key(filename: str) -> tuple[str, str]:
    """(canonical name, version) from a wheel's file name."""
    parts = filename[:-len(".whl")].split("-")
    if not filename.endswith(".whl") or len(parts) < 5:
        raise InputError(filename, "not a wheel file name (NAME-VERSION-...-PLATFORM.whl)")
    return canonical(parts[0]), parts[1]


def download(plan: Plan, dest: Path) -> None:
    """``pip download`` exactly the planned wheels (no dependencies, binaries only, CPython
    3.12 manylinux x86_64) with the lock's hashes required."""
    dest.mkdir(parents=True, exist_ok=True)
    req = dest / "requirements.txt"
    req.write_text("".join(f"{d.name}=={d.version} " + " ".join(
        f"--hash=sha256:{h}" for h in d.hashes) + "\n" for d in plan.wheels))
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--require-hashes", "--python-version", "3.12", "--implementation", "cp",
           *[a for p in PLATFORMS for a in ("--platform", p)], "-d", str(dest), "-r", str(req)]
    print("+", " ".join(cmd), flush=True)
    run = subprocess.run(cmd, capture_output=True, text=True)
    print(run.stdout + run.stderr, flush=True)
    if run.returncode:
        raise RuntimeError(f"pip download failed (exit {run.returncode}): "
                           + (run.stderr.strip().splitlines() or ["no message"])[-1])


def check_wheels(plan: Plan, folder: Path) -> list[tuple[Decision, Path]]:
    """The one wheel file of each planned entry, its sha256 among the lock's hashes."""
    files: dict[tuple[str, str], list[Path]] = {}
    for f in sorted(folder.glob("*.whl")):
        files.setdefault(wheel_key(f.name), []).append(f)
    out, planned = [], set()
    for d in plan.wheels:
        found = files.get((d.name, d.version), [])
        if len(found) != 1:
            raise InputError(str(folder), f"{len(found)} wheel files for {d.name}=={d.version} "
                             "(want exactly one)")
        digest = sha256_file(found[0])
        if digest not in d.hashes:
            raise InputError(str(found[0]), f"sha256 {digest} is not one of the lock's "
                             f"{len(d.hashes)} hashes for {d.name}=={d.version} ({plan.lock})")
        out.append((d, found[0]))
        planned.add((d.name, d.version))
    for key, fs in files.items():
        if key not in planned:
            print(f"not in the plan, left out: {', '.join(f.name for f in fs)}")
    return out


class _Splitter(io.RawIOBase):
    """A write-only stream cut into files ``{prefix}000``, ``{prefix}001``, ... of
    ``size`` bytes each (the last one shorter)."""

    def __init__(self, folder: Path, size: int) -> None:
        self.folder, self.size, self.paths = folder, size, []
        self._f = None
        self._left = 0

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        view = memoryview(b)
        while view:
            if self._left == 0:
                if self._f:
                    self._f.close()
                path = self.folder / f"{PART_PREFIX}{len(self.paths):03d}"
                self.paths.append(path)
                self._f = open(path, "wb")  # noqa: SIM115 (closed at the next part)
                self._left = self.size
            n = min(self._left, len(view))
            self._f.write(view[:n])
            self._left -= n
            view = view[n:]
        return len(b)

    def close(self) -> None:
        if self._f:
            self._f.close()
            self._f = None
        super().close()


def _plan_record(plan: Plan, wheels: list[tuple[Decision, Path]], extra: dict) -> dict:
    return {"lock": plan.lock, **extra, "wheels": [
        {"file": p.name, "name": d.name, "version": d.version, "action": d.action,
         "reason": d.reason, "image_version": d.image_version, "bytes": p.stat().st_size,
         "sha256": sha256_file(p)} for d, p in wheels],
        "left_out": [{"name": d.name, "version": d.version, "action": d.action,
                      "reason": d.reason} for d in plan.decisions if d not in plan.wheels]}


def pack(plan: Plan, wheels: list[tuple[Decision, Path]], out: Path, part: int,
         extra: dict) -> dict:
    """Write plan.json and the wheels as one deterministic tar stream cut into parts of
    ``part`` bytes, then SUMS (sha256 of each part); returns the plan record written."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob(f"{PART_PREFIX}*"):
        old.unlink()
    record = _plan_record(plan, wheels, extra)
    blob = json.dumps(record, indent=1).encode()
    members = [(PLAN_NAME, len(blob))] + [(p.name, p.stat().st_size) for _, p in wheels]
    expect = tar_bytes(members)
    splitter = _Splitter(out, part)
    with tarfile.open(fileobj=splitter, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for name, size in members:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = size, 0o644, 0
            if name == PLAN_NAME:
                tar.addfile(info, io.BytesIO(blob))
                continue
            with open(out_path(wheels, name), "rb") as f:
                tar.addfile(info, f)
    splitter.close()
    total = sum(p.stat().st_size for p in splitter.paths)
    if total != expect or len(splitter.paths) != part_count(expect, part):
        raise RuntimeError(f"tar stream {total} bytes in {len(splitter.paths)} parts; "
                           f"expected {expect} bytes in {part_count(expect, part)}")
    (out / SUMS_NAME).write_text("".join(f"{sha256_file(p)}  {p.name}\n" for p in splitter.paths))
    record.update(tar_bytes=total, parts=[p.name for p in splitter.paths])
    return record


def out_path(wheels: list[tuple[Decision, Path]], name: str) -> Path:
    return next(p for _, p in wheels if p.name == name)


def build_bundle(lock: str, image: str, rules: str, out: str, wheels_dir: str,
                 root: str = ".") -> dict:
    """The rule's one call: plan, download, check against the lock, size the parts from the
    checkout, pack; writes ``out``/bundle.json (sizes, parts, calls) and returns it."""
    plan, r = load_plan(lock, image, rules)
    checkout = checkout_bytes(Path(root))
    part = part_bytes(checkout, r)
    print(f"{lock}: {len(plan.wheels)} wheels to carry ({len(plan.by_action('shadow'))} "
          f"shadowing the image); checkout {checkout} bytes ({checkout / MIB:.1f} MiB), so "
          f"parts of {part // MIB} MiB in a {r.limit_mib:g} MiB transfer "
          f"({r.headroom_mib:g} MiB headroom)", flush=True)
    download(plan, Path(wheels_dir))
    wheels = check_wheels(plan, Path(wheels_dir))
    print(f"{len(wheels)} wheels, every sha256 among the lock's hashes", flush=True)
    record = pack(plan, wheels, Path(out), part, {
        "lock_sha256": sha256_file(Path(lock)), "checkout_bytes": checkout,
        "part_bytes": part, "limit_mib": r.limit_mib, "headroom_mib": r.headroom_mib})
    wheel_bytes = sum(w["bytes"] for w in record["wheels"])
    summary = {k: record[k] for k in ("lock", "lock_sha256", "checkout_bytes", "part_bytes",
                                      "limit_mib", "headroom_mib", "tar_bytes", "parts")}
    summary.update(wheels=len(wheels), wheel_bytes=wheel_bytes,
                   transfer_calls=len(record["parts"]),
                   shadow=[f"{w['name']}=={w['version']} over {w['image_version']}"
                           for w in record["wheels"] if w["action"] == "shadow"])
    (Path(out) / "bundle.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"bundle: {len(wheels)} wheels, {wheel_bytes} bytes ({wheel_bytes / MIB:.1f} MiB, "
          f"{wheel_bytes / 1e9:.3f} GB) of wheels; tar {record['tar_bytes']} bytes in "
          f"{len(record['parts'])} parts of {part // MIB} MiB = {len(record['parts'])} "
          "transfer calls", flush=True)
    return summary


# ---- on the GPU host -------------------------------------------------------------------

def check_parts(parts: Path) -> list[Path]:
    """The parts SUMS lists, each present with its sha256; returns them in order."""
    sums = parts / SUMS_NAME
    if not sums.is_file():
        raise InputError(str(sums), "missing: carry SUMS with the parts")
    paths = []
    for n, line in enumerate(sums.read_text().splitlines(), 1):
        m = re.fullmatch(r"([0-9a-f]{64})  (\S+)", line)
        if not m:
            raise InputError(str(sums), "expected 'SHA256  NAME'", line=n)
        p = parts / m.group(2)
        if not p.is_file():
            raise InputError(str(sums), f"{m.group(2)} has not arrived in {parts}", line=n)
        if sha256_file(p) != m.group(1):
            raise InputError(str(p), "sha256 differs from SUMS (a damaged transfer)", line=n)
        paths.append(p)
    return paths


class _Joined(io.RawIOBase):
    """The parts read back as one stream."""

    def __init__(self, paths: list[Path]) -> None:
        self._paths, self._f = list(paths), None

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while True:
            if self._f is None:
                if not self._paths:
                    return 0
                self._f = open(self._paths.pop(0), "rb")  # noqa: SIM115 (closed at its end)
            n = self._f.readinto(b)
            if n:
                return n
            self._f.close()
            self._f = None


def image_versions(target: Path) -> dict[str, str]:
    """Installed versions on this host's Python path, the target left out."""
    t = str(target.resolve())
    path = [p for p in sys.path if p and not os.path.realpath(p).startswith(t)]
    return {canonical(d.metadata["Name"]): d.version for d in md.distributions(path=path)
            if d.metadata["Name"]}


def install(parts: str, target: str, root: str = ".") -> None:
    """Check the parts, unpack, check each wheel against the lock in this checkout, refuse a
    wheel that would replace an image package the plan does not shadow, then
    ``pip install --no-deps --target``; nothing of the image is touched."""
    parts_dir, target_dir = Path(parts), Path(target)
    paths = check_parts(parts_dir)
    print(f"{len(paths)} parts match SUMS", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(fileobj=_Joined(paths), mode="r|") as tar:
            tar.extractall(tmp, filter="data")
        record = json.loads((Path(tmp) / PLAN_NAME).read_text())
        lock = parse_lock((Path(root) / record["lock"]).read_text(), record["lock"])
        have = image_versions(target_dir)
        todo, said = [], []
        for w in record["wheels"]:
            p = Path(tmp) / w["file"]
            entry = lock.get(w["name"])
            if entry is None or entry.version != w["version"] or sha256_file(p) not in entry.hashes:
                raise InputError(w["file"], f"not {record['lock']}'s {w['name']}=={w['version']} "
                                 "(name, version or sha256 differ)")
            action, why = install_action(w["name"], w["version"], have.get(w["name"]),
                                         w["action"] == "shadow")
            if action == "refuse":
                raise InputError(w["file"], why)
            said.append(why)
            if action == "install":
                todo.append(p)
        for line in said:
            if "shadows" in line or "already" in line:
                print(line)
        print(f"{len(record['wheels'])} wheels match {record['lock']}; installing {len(todo)} "
              f"into {target_dir} (the image's packages untouched)", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                        "--no-compile", "--no-cache-dir", "--target", str(target_dir),
                        *map(str, todo)], check=True)


def check_image(lock: str, image: str, rules: str, target: str) -> int:
    """On the host, before any part travels: the plan from the checkout's files against the
    versions installed here. Prints each wheel the install would refuse and each line of
    image-cuda.txt whose version differs from this host's; returns how many refusals."""
    plan, _ = load_plan(lock, image, rules)
    have = image_versions(Path(target))
    listed = parse_image(Path(image).read_text(), image)
    refused = 0
    for d in plan.wheels:
        action, why = install_action(d.name, d.version, have.get(d.name), d.action == "shadow")
        if action == "refuse":
            refused += 1
            print("would refuse:", why)
    for pkg in listed.values():
        got = have.get(pkg.name)
        same = got is not None and public_version(got) == public_version(pkg.version or "")
        if pkg.version is not None and not same:
            print(f"{image}:{pkg.line}: {pkg.name}: listed {pkg.version} ({pkg.source}), "
                  f"this host has {got or 'none'}")
    print(f"{lock}: {len(plan.wheels)} wheels planned, {refused} would be refused here")
    return refused


USAGE = ("usage: python3 -m claimcheck.envs.offline install PARTSDIR TARGET\n"
         "       python3 -m claimcheck.envs.offline check-image LOCK TARGET")


def main(argv: list[str] | None = None) -> int:
    """``install PARTS TARGET`` or ``check-image LOCK TARGET`` (run in the checkout's root)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3 or args[0] not in ("install", "check-image"):
        print(USAGE, file=sys.stderr)
        return 2
    try:
        if args[0] == "install":
            install(args[1], args[2])
            return 0
        return 1 if check_image(args[1], "envs/offline/image-cuda.txt",
                                "envs/offline/bundle-rules.toml", args[2]) else 0
    except InputError as e:
        print(f"{args[0]}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
