"""The multicast guard reads the environment too (issue 39, item 1): an engine over more than
one GPU runs with vLLM's standalone FlashInfer all-reduce off and a workspace backend that
makes no multicast object, whether the request for it comes from the engine's ``env`` or from
the shell that runs ``serve``/``measure``; ``VLLM_DP_SIZE`` counts as a parallel size; a
``VLLM_*`` variable the guard does not know is refused on such an engine unless
config/vllm_env.yaml allows it with its reason.

No server is started: the commands run with a stand-in ``vllm`` first on PATH that would
leave a mark if anything ran it, and each test asserts there is no mark."""

import json
import sys
import time

import pytest

from claimcheck.config.configfiles import load_engines, load_vllm_env
from claimcheck.config.engines import FUSION_OFF, MULTICAST_OFF, engine_refusal, multicast_refusal
from claimcheck.files.errors import InputError
from claimcheck.files.paths import CONFIG
from claimcheck.measure import server as srv
from tests._cli import cli, make_stand_in, one_line_error

TP2 = ["m", "--tensor-parallel-size", "2", "--compilation-config", FUSION_OFF]
MULTI = "'--tensor-parallel-size 2' runs the engine on more than one GPU, which needs "
TP2_ENGINE = "bf16-dummy-16k-tp2"  # the registry's two-GPU engine (the command)


def inherited(k, want, got):
    return (f"{MULTI}{k}={want}, but the environment it would inherit (the shell's or the "
            f"engine's env) sets {k}={got!r}: unset it (claimcheck sets {k}={want} itself)")


def unknown(spans, names):
    one = len(names) == 1
    return (f"{spans} runs the engine on more than one GPU, where a VLLM_* variable must be "
            "one the multicast guard knows or one config/vllm_env.yaml allows with its "
            f"reason; the server's environment has {', '.join(names)}: unset "
            f"{'it' if one else 'them'}, or add {'it' if one else 'each'} to "
            "config/vllm_env.yaml with the reason it cannot create an NVLink multicast object")


def engines_file(tmp_path, tp, extra, env=None):
    p = tmp_path / "engines.yaml"
    p.write_text("engines:\n  e:\n    description: d\n    model: m\n    weights: dummy\n"
                 f"    served_model_name: s\n    tensor_parallel_size: {tp}\n"
                 f"    extra_args: {json.dumps(extra)}\n"
                 + (f"    env: {json.dumps(env)}\n" if env else ""), encoding="utf-8")
    return p


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """A ``vllm`` first on PATH that leaves a mark when anything runs it."""
    s = make_stand_in(tmp_path)
    monkeypatch.setenv("PATH", s["path"])
    return s


# --- the standalone FlashInfer all-reduce and its workspace backend -------------------------

@pytest.mark.parametrize("value", ["1", "2"])
def test_flashinfer_allreduce_in_the_shell_refuses_serve_of_the_tp2_engine(
        tmp_path, stand_in, monkeypatch, value):
    """The issue's command: ``VLLM_ALLREDUCE_USE_FLASHINFER=1 claimcheck serve --engine
    bf16-dummy-16k-tp2`` started the stand-in; now one line, nothing run."""
    monkeypatch.setenv("VLLM_ALLREDUCE_USE_FLASHINFER", value)
    r = cli("serve", "--engine", TP2_ENGINE, "--state", tmp_path / "state")
    assert one_line_error(r) == (
        f"claimcheck: error: {CONFIG / 'engines.yaml'}: engines.{TP2_ENGINE}: "
        + inherited("VLLM_ALLREDUCE_USE_FLASHINFER", "0", value))
    assert not stand_in["mark"].exists() and not (tmp_path / "state").exists()


def test_flashinfer_allreduce_in_the_shell_refuses_measure_and_predict(tmp_path, stand_in,
                                                                       monkeypatch):
    monkeypatch.setenv("VLLM_ALLREDUCE_USE_FLASHINFER", "1")
    why = (f"claimcheck: error: {CONFIG / 'engines.yaml'}: engines.{TP2_ENGINE}: "
           + inherited("VLLM_ALLREDUCE_USE_FLASHINFER", "0", "1"))
    r = cli("measure", "--card", "h200", "--engine", TP2_ENGINE, "--protocol", "decode-rows",
            "--state", tmp_path / "state", "--runs-dir", tmp_path / "runs")
    assert one_line_error(r) == why
    runs = tmp_path / "runs"
    runs.mkdir()
    r = cli("predict", "--card", "h200", "--engine", TP2_ENGINE, "--protocol", "decode-rows",
            "--runs", runs)
    assert one_line_error(r) == why
    assert not stand_in["mark"].exists() and list(runs.iterdir()) == []


def test_flashinfer_allreduce_in_the_engine_env_is_refused_by_the_loader(tmp_path):
    p = engines_file(tmp_path, 2, ["--compilation-config", FUSION_OFF],
                     env={"VLLM_ALLREDUCE_USE_FLASHINFER": "1"})
    with pytest.raises(InputError) as e:
        load_engines(p)
    assert str(e.value) == (f"{p}: engines.e: env VLLM_ALLREDUCE_USE_FLASHINFER='1' turns "
                            "NVLink multicast back on (it must stay '0')")


@pytest.mark.parametrize("backend", ["auto", "AUTO", ""])
def test_an_auto_backend_in_the_shell_is_refused_on_two_gpus(backend):
    before = {"VLLM_FLASHINFER_ALLREDUCE_BACKEND": backend}
    assert multicast_refusal(TP2, {**before, **MULTICAST_OFF}, before=before) == inherited(
        "VLLM_FLASHINFER_ALLREDUCE_BACKEND", "trtllm", backend)


def test_an_mnnvl_backend_in_the_shell_is_refused_naming_mnnvl(tmp_path, stand_in,
                                                                monkeypatch):
    monkeypatch.setenv("VLLM_FLASHINFER_ALLREDUCE_BACKEND", "mnnvl")
    with pytest.raises(InputError) as e:
        srv.start([stand_in["exe"], "serve", *TP2], tmp_path / "server.log",
                  base_url="http://127.0.0.1:1")
    # the guard's trtllm is over it in the final environment: the shell's request is named
    assert str(e.value) == ("the vllm serve command: refusing to start: "
                            + inherited("VLLM_FLASHINFER_ALLREDUCE_BACKEND", "trtllm", "mnnvl"))
    assert not stand_in["mark"].exists() and not (tmp_path / "server.log").exists()


def test_the_shell_that_starts_a_server_is_read_before_the_guard_overrides_it(
        tmp_path, stand_in, monkeypatch):
    monkeypatch.setenv("VLLM_ALLREDUCE_USE_FLASHINFER", "1")
    with pytest.raises(InputError) as e:
        srv.start([stand_in["exe"], "serve", *TP2], tmp_path / "server.log",
                  base_url="http://127.0.0.1:1", engine="e")
    assert str(e.value) == ("the vllm serve command: engines.e: refusing to start: "
                            + inherited("VLLM_ALLREDUCE_USE_FLASHINFER", "0", "1"))
    assert not stand_in["mark"].exists()


def test_a_single_gpu_engine_gets_the_shells_request_overridden_not_refused():
    before = {"VLLM_ALLREDUCE_USE_FLASHINFER": "1"}
    assert multicast_refusal(["m"], {**before, **MULTICAST_OFF}, before=before) is None


def test_every_started_server_runs_with_the_flashinfer_allreduce_off(tmp_path):
    """Set, not assumed: an unset backend is vLLM's ``auto`` (``mnnvl``); the server gets
    ``trtllm`` and the all-reduce off, and its record says so."""
    code = ("import os; print(os.environ['VLLM_ALLREDUCE_USE_FLASHINFER'], "
            "os.environ['VLLM_FLASHINFER_ALLREDUCE_BACKEND'])")
    log = tmp_path / "server.log"
    s = srv.start([sys.executable, "-c", code], log, base_url="http://127.0.0.1:9")
    s._proc.wait(timeout=30)
    for _ in range(50):
        if log.read_text().strip():
            break
        time.sleep(0.1)
    assert log.read_text().split() == ["0", "trtllm"]
    assert s.to_record()["env"]["VLLM_ALLREDUCE_USE_FLASHINFER"] == "0"
    assert s.to_record()["env"]["VLLM_FLASHINFER_ALLREDUCE_BACKEND"] == "trtllm"


# --- VLLM_DP_SIZE ----------------------------------------------------------------------------

def test_vllm_dp_size_in_the_engine_env_makes_it_multi_gpu(tmp_path):
    p = engines_file(tmp_path, 1, [], env={"VLLM_DP_SIZE": "2"})
    with pytest.raises(InputError) as e:
        load_engines(p)
    assert str(e.value) == (
        f"{p}: engines.e: 'env VLLM_DP_SIZE=2' runs the engine on more than one GPU, which "
        "needs pass_config.fuse_allreduce_rms false in the compilation config vLLM keeps (its "
        "last --compilation-config): add extra_args ['--compilation-config', "
        "'{\"pass_config\":{\"fuse_allreduce_rms\":false}}'] after any other; vLLM's default "
        "all-reduce + RMSNorm fusion may create an NVLink multicast object")


def test_vllm_dp_size_in_the_shell_brings_the_environment_rules(monkeypatch, tmp_path):
    p = engines_file(tmp_path, 1, ["-cc", FUSION_OFF])
    monkeypatch.setenv("VLLM_DP_SIZE", "2")
    monkeypatch.setenv("VLLM_ALLREDUCE_USE_FLASHINFER", "1")
    with pytest.raises(InputError) as e:
        load_engines(p)
    assert str(e.value) == (
        f"{p}: engines.e: 'env VLLM_DP_SIZE=2' runs the engine on more than one GPU, which "
        "needs VLLM_ALLREDUCE_USE_FLASHINFER=0, but the environment it would inherit (the "
        "shell's or the engine's env) sets VLLM_ALLREDUCE_USE_FLASHINFER='1': unset it "
        "(claimcheck sets VLLM_ALLREDUCE_USE_FLASHINFER=0 itself)")


def test_a_vllm_dp_size_that_is_not_an_integer_is_refused():
    assert multicast_refusal(["m"], {**MULTICAST_OFF, "VLLM_DP_SIZE": "2x"}) == (
        "env VLLM_DP_SIZE='2x' is not a plain integer (vLLM reads it as the data-parallel "
        "size)")
    assert multicast_refusal(["m"], {**MULTICAST_OFF, "VLLM_DP_SIZE": "1"}) is None


# --- VLLM_* variables the guard does not know -------------------------------------------------

def test_an_unknown_vllm_variable_is_refused_on_a_multi_gpu_engine():
    env = {**MULTICAST_OFF, "VLLM_USE_NCCL_SYMM_MEM": "1", "VLLM_ZZ": "x"}
    assert multicast_refusal(TP2, env) == unknown("'--tensor-parallel-size 2'",
                                                  ["VLLM_USE_NCCL_SYMM_MEM", "VLLM_ZZ"])
    assert multicast_refusal(TP2, {**MULTICAST_OFF, "VLLM_ZZ": "x"}) == unknown(
        "'--tensor-parallel-size 2'", ["VLLM_ZZ"])


def test_an_unknown_vllm_variable_in_the_shell_refuses_the_registry_tp2_engine(
        tmp_path, stand_in, monkeypatch):
    monkeypatch.setenv("VLLM_ALLREDUCE_USE_SYMM_MEM", "1")
    r = cli("serve", "--engine", TP2_ENGINE, "--state", tmp_path / "state")
    assert one_line_error(r) == (
        f"claimcheck: error: {CONFIG / 'engines.yaml'}: engines.{TP2_ENGINE}: "
        + unknown("'--tensor-parallel-size 2'", ["VLLM_ALLREDUCE_USE_SYMM_MEM"]))
    assert not stand_in["mark"].exists()


def test_an_allowed_vllm_variable_passes_with_its_reason():
    allowed = load_vllm_env()
    assert "VLLM_LOGGING_LEVEL" in allowed and allowed["VLLM_LOGGING_LEVEL"].strip()
    env = {**MULTICAST_OFF, "VLLM_LOGGING_LEVEL": "DEBUG"}
    assert multicast_refusal(TP2, env, allowed=allowed) is None
    assert multicast_refusal(TP2, env) == unknown("'--tensor-parallel-size 2'",
                                                  ["VLLM_LOGGING_LEVEL"])


def test_the_allow_list_cannot_let_a_guarded_variable_through():
    allowed = {"VLLM_ALLREDUCE_USE_FLASHINFER": "said to be harmless"}
    before = {"VLLM_ALLREDUCE_USE_FLASHINFER": "1"}
    assert multicast_refusal(TP2, {**before, **MULTICAST_OFF}, before=before,
                             allowed=allowed) == inherited(
        "VLLM_ALLREDUCE_USE_FLASHINFER", "0", "1")


def test_a_single_gpu_engine_may_keep_unknown_vllm_variables(tmp_path):
    p = engines_file(tmp_path, 1, [], env={"VLLM_CPU_KVCACHE_SPACE": "1"})
    assert load_engines(p)["e"].env == {"VLLM_CPU_KVCACHE_SPACE": "1"}


def test_an_allow_list_entry_without_a_reason_is_refused_naming_the_file(tmp_path):
    p = tmp_path / "vllm_env.yaml"
    p.write_text("allowed:\n  VLLM_X: ''\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_vllm_env(p)
    assert str(e.value).startswith(f"{p}:2: allowed.VLLM_X: ")


def test_the_committed_engines_pass_in_a_clean_environment():
    for e in load_engines().values():
        assert engine_refusal(e, base_env={}, allowed=load_vllm_env()) is None, e.name


def test_a_checkout_without_the_allow_list_allows_no_vllm_variable(tmp_path, monkeypatch):
    from claimcheck.files import paths
    monkeypatch.setattr(paths, "CONFIG", tmp_path)
    assert load_vllm_env() == {}
    with pytest.raises(InputError, match="no such file"):
        load_vllm_env(tmp_path / "vllm_env.yaml")
