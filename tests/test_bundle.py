"""The offline bundle's plan from the committed lock files, on CPU (nothing downloaded):
the wheel list against the hand-made 0.26.0 kit and a hand-worked 0.33.0 shadow list, every
hash against the lock read another way, the exclusions, and the part-sizing arithmetic."""

from __future__ import annotations

import io
import os
import re
import tarfile
from pathlib import Path

import pytest

from claimcheck.envs.bundle import (
    MIB,
    Rules,
    install_action,
    parse_image,
    parse_lock,
    parse_rules,
    part_bytes,
    part_count,
    plan_bundle,
    tar_bytes,
)
from claimcheck.envs.offline import _Joined, _Splitter, check_parts, sha256_file, wheel_key
from claimcheck.files.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
OFFLINE = ROOT / "envs" / "offline"


def plan_for(version: str):
    rules = parse_rules((OFFLINE / "bundle-rules.toml").read_text(), "bundle-rules.toml")
    image = parse_image((OFFLINE / "image-cuda.txt").read_text(), "image-cuda.txt")
    lock = parse_lock((ROOT / f"envs/vllm-{version}.lock").read_text(), "lock")
    return plan_bundle(lock, image, rules), rules


def lock_hashes_by_blocks(version: str) -> dict[tuple[str, str], set[str]]:
    """The lock read another way: split into blocks at each unindented line."""
    text = (ROOT / f"envs/vllm-{version}.lock").read_text()
    out = {}
    for block in re.split(r"\n(?=[a-z0-9])", text):
        m = re.match(r"([a-z0-9][a-z0-9._-]*)==(\S+)", block)
        if m:
            out[(m.group(1), m.group(2))] = set(re.findall(r"sha256:([0-9a-f]{64})", block))
    return out


def test_026_plan_is_the_hand_listed_kit():
    kit = dict(line.split("==") for line in
               (OFFLINE / "vllm-0.26.0-on-torch-2.11-cu130.txt").read_text().split())
    plan, _ = plan_for("0.26.0")
    assert {d.name: d.version for d in plan.wheels} == kit
    assert len(kit) == 86
    assert plan.by_action("shadow") == ()  # the image's torch 2.11.0 serves 0.26.0


def test_033_plan_shadows_torch_and_the_cuda_wheels_that_moved():
    plan, _ = plan_for("0.33.0")
    # Worked out by hand from the two locks: torch 2.14.0, its triton, and the CUDA wheels
    # whose 0.33.0 version differs from torch 2.11.0's pin (the image's, assumed).
    assert {(d.name, d.version, d.image_version) for d in plan.by_action("shadow")} == {
        ("torch", "2.14.0", "2.11.0+cu130"), ("triton", "3.8.0", "3.6.0"),
        # vLLM 0.33.0 pins it; the image's, built for torch 2.11, broke the first H200 start
        ("torchvision", "0.29.0", "0.26.0"),
        ("cuda-toolkit", "13.0.3.0", "13.0.2"),
        ("nvidia-cublas", "13.1.1.3", "13.1.0.3"),
        ("nvidia-cudnn-cu13", "9.24.0.43", "9.19.0.56"),
        ("nvidia-cusparselt-cu13", "0.8.1", "0.8.0"),
        ("nvidia-nccl-cu13", "2.30.7", "2.28.9"),
        ("nvidia-nvjitlink", "13.5.37", "13.0.88")}
    names = {d.name for d in plan.wheels}
    assert len(names) == 100
    # same version as the image's (assumed) torch 2.11 pin: not carried
    assert {"nvidia-cufft", "nvidia-curand", "nvidia-nvshmem-cu13"}.isdisjoint(names)
    assert {"vllm", "flashinfer-python", "xgrammar", "apache-tvm-ffi", "nccl4py",
            "instanttensor", "oss-harmony"} <= names
    # the image's transformers 5.17.0 (vLLM 0.33.0 asks >=5.16.1,<5.21.0) and cuda-bindings
    # (torch asks a range) are kept, not shadowed, and said so
    kept = {d.name: d for d in plan.by_action("image-kept")}
    assert kept["cuda-bindings"].image_version == "13.4.4"
    assert kept["transformers"].image_version == "5.17.0"
    assert "5.20.2" in kept["transformers"].reason


@pytest.mark.parametrize("version", ["0.26.0", "0.33.0"])
def test_every_carried_wheel_has_the_locks_hashes(version):
    plan, _ = plan_for(version)
    blocks = lock_hashes_by_blocks(version)
    for d in plan.wheels:
        assert set(d.hashes) == blocks[(d.name, d.version)], d.name
    assert len(blocks) == len(plan.decisions)


def test_known_hashes_copied_from_the_locks():
    p26, _ = plan_for("0.26.0")
    p33, _ = plan_for("0.33.0")
    vllm26 = next(d for d in p26.wheels if d.name == "vllm")
    torch33 = next(d for d in p33.wheels if d.name == "torch")
    assert len(vllm26.hashes) == 3
    assert "0e7cf18cb0d8bd666b6120932e29c7aef3502b61a08b44da4839580c539a7cdb" in torch33.hashes
    assert len(torch33.hashes) == 24


@pytest.mark.parametrize("version", ["0.26.0", "0.33.0"])
def test_excluded_names_are_absent(version):
    plan, rules = plan_for(version)
    names = {d.name for d in plan.wheels}
    assert {"torchaudio", "nvidia-cuda-nvcc", "tilelang", "quack-kernels",
            "nvidia-cutlass-dsl"}.isdisjoint(names)
    # torchvision is the image's where its torch is (0.26.0), the lock's where torch moves
    tv = {d.version for d in plan.wheels if d.name == "torchvision"}
    assert tv == ({"0.29.0"} if version == "0.33.0" else set())
    assert set(rules.exclude).isdisjoint(names)
    # what only excluded packages need goes too
    assert {"z3-solver", "tokenspeed-triton", "nvidia-nvvm",
            "nvidia-cutlass-dsl-libs-base"}.isdisjoint(names)
    assert all(d.reason for d in plan.decisions)


def test_part_sizing_arithmetic():
    r = Rules({}, {}, limit_mib=64, headroom_mib=2)
    # 64 MiB = 67,108,864 B; less a 24,721,303 B checkout and 2,097,152 B: 40,290,409 B,
    # 38.4 MiB, so 38 MiB parts
    assert part_bytes(24_721_303, r) == 38 * MIB
    assert part_bytes(0, r) == 62 * MIB
    with pytest.raises(InputError, match="leaves"):
        part_bytes(61 * MIB + 1, r)
    assert part_count(38 * MIB, 38 * MIB) == 1
    assert part_count(38 * MIB + 1, 38 * MIB) == 2
    # the 0.26.0 kit's 368,584,614 B of wheels: 10 parts of 38 MiB (39,845,888 B)
    assert part_count(368_584_614, 38 * MIB) == 10


def test_tar_bytes_matches_a_real_tar_stream():
    sizes = [0, 1, 511, 512, 513, 10_000, 33_000]
    names = [f"f{i}.whl" for i in range(6)] + ["p" * 108 + ".whl"]  # the last needs pax
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for name, s in zip(names, sizes, strict=True):
            info = tarfile.TarInfo(name)
            info.size = s
            tar.addfile(info, io.BytesIO(b"x" * s))
    # by hand: headers 7 blocks of 512 B and 2 of pax for the long name; data blocks
    # 0+1+1+1+2+20+65 = 90; two end blocks: 101 blocks, padded to 6 records of 10,240 B
    # (without the pax header: 99 blocks, 5 records)
    assert tar_bytes(list(zip(names, sizes, strict=True))) == len(buf.getvalue()) == 61_440
    assert tar_bytes([("a" * 100, 1)]) == 10_240  # 100 characters still fit ustar


def test_parts_split_rejoin_and_a_damaged_part_is_named(tmp_path):
    data = bytes(range(256)) * 1000  # 256,000 B
    s = _Splitter(tmp_path, 100_000)
    s.write(data[:150_000])
    s.write(data[150_000:])
    s.close()
    assert [p.name for p in s.paths] == ["part000", "part001", "part002"]
    assert [p.stat().st_size for p in s.paths] == [100_000, 100_000, 56_000]
    (tmp_path / "SUMS").write_text("".join(f"{sha256_file(p)}  {p.name}\n" for p in s.paths))
    assert _Joined(check_parts(tmp_path)).read() == data
    (tmp_path / "part001").write_bytes(b"0" + data[100_001:200_000])
    with pytest.raises(InputError, match="part001.*damaged"):
        check_parts(tmp_path)
    (tmp_path / "part001").write_bytes(data[100_000:200_000])
    (tmp_path / "part002").unlink()
    with pytest.raises(InputError, match="SUMS:3: part002 has not arrived"):
        check_parts(tmp_path)


def test_install_refuses_to_replace_an_image_package():
    assert install_action("vllm", "0.33.0", None, False)[0] == "install"
    assert install_action("torch", "2.11.0", "2.11.0+cu130", False)[0] == "skip"
    act, why = install_action("torch", "2.14.0", "2.11.0+cu130", True)
    assert act == "install" and "shadows the image's 2.11.0+cu130" in why
    act, why = install_action("numpy", "2.3.5", "2.5.2", False)
    assert act == "refuse" and "numpy 2.3.5: the image has 2.5.2" in why


def test_wheel_key():
    assert wheel_key("nvidia_cudnn_cu13-9.24.0.43-py3-none-manylinux_2_27_x86_64.whl") == (
        "nvidia-cudnn-cu13", "9.24.0.43")
    with pytest.raises(InputError):
        wheel_key("vllm-0.33.0.tar.gz")


TINY_LOCK = """\
app==1.0 \\
    --hash=sha256:{a}
    # via -r req.in
kern==2.0 \\
    --hash=sha256:{b}
    # via app
kern-dep==3.0 \\
    --hash=sha256:{c}
    # via kern
both==4.0 \\
    --hash=sha256:{d}
    # via
    #   app
    #   kern
""".format(a="a" * 64, b="b" * 64, c="c" * 64, d="d" * 64)


def test_tiny_lock_exclusion_reaches_only_what_nothing_else_needs():
    lock = parse_lock(TINY_LOCK, "tiny.lock")
    rules = Rules({"kern": "optional"}, {}, 64, 2)
    plan = plan_bundle(lock, {}, rules)
    assert {d.name: d.action for d in plan.decisions} == {
        "app": "ship", "kern": "excluded", "kern-dep": "unneeded", "both": "ship"}


def test_bad_input_names_file_and_line():
    with pytest.raises(InputError, match=r"tiny.lock:4: kern: no --hash"):
        parse_lock(TINY_LOCK.replace("    --hash=sha256:" + "b" * 64 + "\n", ""), "tiny.lock")
    with pytest.raises(InputError, match=r"img:2: expected"):
        parse_image("torch==2.11.0  # seen: x\ntorch 2.11.0\n", "img")
    with pytest.raises(InputError, match=r"img:1: torch: 'seen' needs a ==VERSION"):
        parse_image("torch  # seen: x\n", "img")
    image = parse_image("app  # listed: KINDS.md\n", "img")
    with pytest.raises(InputError, match=r"img:1: app: its version was not read"):
        plan_bundle(parse_lock(TINY_LOCK, "t"), image, Rules({}, {"app": "pinned"}, 64, 2),
                    image_source="img")
    with pytest.raises(InputError, match=r"exclude.x: needs a reason"):
        parse_rules('[exclude]\nx = ""\n[transfer]\nlimit_mib = 64\nheadroom_mib = 2\n', "r")


def test_lean_checkout_takes_the_runs_out_of_the_index_and_back(tmp_path):
    """envs/offline/lean-checkout.sh on a clone of this checkout: `on` leaves the runs on
    disk but out of what travels (the index and the ignore list), `off` restores the index,
    and `on` with staged changes is refused."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    clone = tmp_path / "c"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(root), str(clone)], check=True)
    script = clone / "envs/offline/lean-checkout.sh"
    (clone / "envs/offline/lean-checkout.sh").write_bytes(
        (root / "envs/offline/lean-checkout.sh").read_bytes())  # the working copy's script
    script.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(root / "src")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(script), *args], cwd=clone, env=env, text=True,
                              capture_output=True)

    def tracked() -> int:
        out = subprocess.run(["git", "ls-files", "data/raw/runs"], cwd=clone, text=True,
                             capture_output=True, check=True).stdout
        return len(out.split())

    n = tracked()
    assert n > 100
    on = run("on")
    assert on.returncode == 0, on.stderr
    assert tracked() == 0 and (clone / "data/raw/runs/SESSIONS.md").is_file()
    # the committed runs' names travel beside the lean tree (device.sh measure reserves
    # them), every run directory and nothing else, dots in names kept
    names = (clone / "data/raw/lean-run-names.txt").read_text().split()
    dirs = sorted(p.name for p in (clone / "data/raw/runs").iterdir() if p.is_dir())
    assert names == dirs and "SESSIONS.md" not in names
    assert "h200-20261203-bf16-dummy-16k-mtp3-forced2.5-speculation" in names
    before, after = (int(x) for x in re.findall(r"checkout (\d+) -> (\d+) bytes", on.stdout)[0])
    assert after < before / 4
    assert run("status").stdout.strip() == "on"
    assert "already on" in run("on").stdout
    off = run("off")
    assert off.returncode == 0 and tracked() == n
    assert not (clone / "data/raw/lean-run-names.txt").exists()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=clone, text=True,
                            capture_output=True, check=True).stdout.split("\n")
    assert all(x.endswith("lean-checkout.sh") for x in status if x)  # only the copied script
    (clone / "README.md").write_text("changed\n")
    subprocess.run(["git", "add", "README.md"], cwd=clone, check=True)
    refused = run("on")
    assert refused.returncode == 2 and "staged changes" in refused.stderr
    assert tracked() == n


@pytest.mark.parametrize("args", [["nope"], []])
def test_lean_checkout_refuses_an_unknown_or_missing_verb(args):
    """Anything but on|off|status is one usage line and exit 2, touching nothing."""
    import subprocess

    script = Path(__file__).resolve().parents[1] / "envs/offline/lean-checkout.sh"
    r = subprocess.run(["bash", str(script), *args], text=True, capture_output=True)
    assert r.returncode != 0
    assert "usage: lean-checkout.sh on|off|status" in r.stderr
