"""No engine this project starts may use NVLink multicast (issue 21): the GPU hosts forbid it.

Pure checks on engine configurations, the committed engines file, a hand-made engines file
with the words of its one-line error, and a real child process started the way the server
is started (its environment read back). No GPU: nothing here starts vLLM."""

import sys
import time

import pytest

from claimcheck.core.engines import FUSION_OFF, MULTICAST_OFF, load_engines, multicast_refusal
from claimcheck.core.errors import InputError
from claimcheck.measure import server as srv

BASE = ["--gdn-prefill-backend", "triton"]


def test_tp1_needs_no_switch_and_tp2_needs_the_fusion_off():
    assert multicast_refusal(1, BASE, {}) is None
    why = multicast_refusal(2, BASE, {})
    assert why == ("tensor_parallel_size 2 needs extra_args ['--compilation-config', "
                   "'{\"pass_config\":{\"fuse_allreduce_rms\":false}}']: vLLM's default "
                   "all-reduce + RMSNorm fusion may create an NVLink multicast object")
    assert multicast_refusal(2, [*BASE, "--compilation-config", FUSION_OFF], {}) is None
    assert multicast_refusal(2, [*BASE, "-O", FUSION_OFF], {}) is None
    assert multicast_refusal(2, [f"--compilation-config={FUSION_OFF}"], {}) is None


def test_fusion_left_on_or_unreadable_is_refused_with_what_was_given():
    on = '{"pass_config":{"fuse_allreduce_rms":true}}'
    assert multicast_refusal(2, ["--compilation-config", on], {}).endswith(f"(given: {on})")
    assert "(given: {not json)" in multicast_refusal(2, ["--compilation-config", "{not json"],
                                                     {})
    # another pass switched off is not this one
    other = '{"pass_config":{"enable_fusion":false}}'
    assert "needs extra_args" in multicast_refusal(4, ["--compilation-config", other], {})


def test_mnnvl_and_multicast_env_are_refused_at_any_tensor_parallel_size():
    assert multicast_refusal(1, ["--all2all-backend", "MNNVL"], {}) == (
        "'MNNVL' names the mnnvl all-reduce backend, which uses NVLink multicast")
    assert "mnnvl" in multicast_refusal(1, BASE, {"VLLM_FLASHINFER_ALLREDUCE_BACKEND": "mnnvl"})
    assert multicast_refusal(1, BASE, {"NCCL_NVLS_ENABLE": "1"}) == (
        "env NCCL_NVLS_ENABLE='1' turns NVLink multicast back on (it must stay '0')")
    assert multicast_refusal(1, BASE, {"NCCL_NVLS_ENABLE": "0"}) is None


def test_committed_engines_pass_and_the_tp2_engine_has_the_fusion_off():
    engines = load_engines()
    tp2 = [e for e in engines.values() if e.tensor_parallel_size > 1]
    assert tp2, "config/engines.yaml keeps a TP > 1 engine for the two-card runs"
    for e in tp2:
        i = e.extra_args.index("--compilation-config")
        assert e.extra_args[i + 1] == FUSION_OFF


def test_an_engines_file_without_the_switch_is_refused_naming_the_engine(tmp_path):
    p = tmp_path / "engines.yaml"
    p.write_text("engines:\n  two:\n    description: d\n    model: m\n    weights: dummy\n"
                 "    served_model_name: s\n    tensor_parallel_size: 2\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_engines(p)
    assert str(e.value).startswith(f"{p}: engines.two: tensor_parallel_size 2 needs extra_args")


def test_every_started_server_gets_multicast_off_whatever_its_engine_env(tmp_path):
    code = ("import os; print(' '.join(os.environ[k] for k in ('NCCL_NVLS_ENABLE', "
            "'TORCH_SYMM_MEM_DISABLE_MULTICAST', 'NVSHMEM_DISABLE_NVLS')))")
    log = tmp_path / "server.log"
    s = srv.start([sys.executable, "-c", code], log, env={"NCCL_NVLS_ENABLE": "1"},
                  base_url="http://127.0.0.1:9")
    s._proc.wait(timeout=30)
    for _ in range(50):
        if log.read_text().strip():
            break
        time.sleep(0.1)
    assert log.read_text().split() == ["0", "1", "1"]
    assert {k: s.env[k] for k in MULTICAST_OFF} == MULTICAST_OFF  # recorded as started
