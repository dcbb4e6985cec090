"""No engine this project starts may use NVLink multicast (issue 21): the GPU hosts forbid it.

Pure checks on engine configurations, the committed engines file, a hand-made engines file
with the words of its one-line error, and a real child process started the way the server
is started (its environment read back). No GPU: nothing here starts vLLM."""

import sys
import time

import pytest

from claimcheck.config.configfiles import load_engines
from claimcheck.config.engines import FUSION_OFF, MULTICAST_OFF, env_refusal, multicast_refusal
from claimcheck.files.errors import InputError
from claimcheck.measure import server as srv

BASE = ["m", "--gdn-prefill-backend", "triton"]
ENV = dict(MULTICAST_OFF)
NEEDS = ("runs the engine on more than one GPU, which needs pass_config.fuse_allreduce_rms "
         "false in the compilation config vLLM keeps (its last --compilation-config): add "
         "extra_args ['--compilation-config', '{\"pass_config\":{\"fuse_allreduce_rms\":"
         "false}}'] after any other; vLLM's default all-reduce + RMSNorm fusion may create an "
         "NVLink multicast object")


def test_tp1_needs_no_switch_and_tp2_needs_the_fusion_off():
    assert multicast_refusal(BASE, ENV) is None
    assert multicast_refusal([*BASE, "--tensor-parallel-size", "2"], ENV) == \
        f"'--tensor-parallel-size 2' {NEEDS}"
    tp2 = [*BASE, "--tensor-parallel-size", "2"]
    assert multicast_refusal([*tp2, "--compilation-config", FUSION_OFF], ENV) is None
    assert multicast_refusal([*tp2, "-cc", FUSION_OFF], ENV) is None
    assert multicast_refusal([*tp2, f"--compilation-config={FUSION_OFF}"], ENV) is None
    assert multicast_refusal([*tp2, f"--compilation_config={FUSION_OFF}"], ENV) is None


def test_fusion_left_on_or_unreadable_is_refused_with_what_was_given():
    tp2 = [*BASE, "-tp", "2"]
    on = '{"pass_config":{"fuse_allreduce_rms":true}}'
    assert multicast_refusal([*tp2, "--compilation-config", on], ENV) == (
        f"'-tp 2' {NEEDS} (vLLM would keep '--compilation-config {on}')")
    assert multicast_refusal([*tp2, "--compilation-config", "{not json"], ENV) == (
        "the vllm serve command cannot be read for certain: '--compilation-config {not "
        "json': not JSON (Expecting property name enclosed in double quotes at character 1)")
    # another pass switched off is not this one
    other = '{"pass_config":{"enable_fusion":false}}'
    assert multicast_refusal([*tp2, "--compilation-config", other], ENV).startswith(
        f"'-tp 2' {NEEDS}")
    # false given as a string or a number is not certainly false
    assert NEEDS in multicast_refusal(
        [*tp2, "-cc", '{"pass_config":{"fuse_allreduce_rms":0}}'], ENV)


def test_mnnvl_and_multicast_env_are_refused_at_any_tensor_parallel_size():
    assert multicast_refusal([*BASE, "--all2all-backend", "MNNVL"], ENV) == (
        "'MNNVL' names the mnnvl all-reduce backend, which uses NVLink multicast")
    assert multicast_refusal(BASE, {**ENV, "VLLM_FLASHINFER_ALLREDUCE_BACKEND": "mnnvl"}) == (
        "env VLLM_FLASHINFER_ALLREDUCE_BACKEND='mnnvl' names the mnnvl all-reduce backend, "
        "which uses NVLink multicast")
    assert env_refusal({"NCCL_NVLS_ENABLE": "1"}) == (
        "env NCCL_NVLS_ENABLE='1' turns NVLink multicast back on (it must stay '0')")
    assert env_refusal({"NCCL_NVLS_ENABLE": "0"}) is None


@pytest.mark.parametrize("missing", sorted(MULTICAST_OFF))
def test_a_multi_gpu_server_without_each_multicast_variable_is_refused(missing):
    env = {k: v for k, v in ENV.items() if k != missing}
    args = [*BASE, "-tp", "2", "-cc", FUSION_OFF]
    assert multicast_refusal(args, env) == (
        f"'-tp 2' runs the engine on more than one GPU, which needs {missing}="
        f"{MULTICAST_OFF[missing]} in the server's environment (it has None)")
    assert multicast_refusal(args, ENV) is None


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
    assert str(e.value) == f"{p}: engines.two: '--tensor-parallel-size 2' {NEEDS}"


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
