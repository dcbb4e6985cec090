"""The multicast guard reads the command vLLM will run (issue 26): every bypass of the fault
sweep, refused on every road (the engines loader, ``serve``, ``measure``, ``predict`` and the
start of a server itself), each with the words of its refusal.

No server is started: the commands run with a stand-in ``vllm`` first on PATH that would
leave a mark if anything ran it, and each test asserts there is no mark."""

import json
import os
import sys

import pytest

from claimcheck.cli import main
from claimcheck.config import configfiles as config_loaders
from claimcheck.config import engines as core_engines
from claimcheck.config.configfiles import load_engines
from claimcheck.config.engines import FUSION_OFF, MULTICAST_OFF, multicast_refusal
from claimcheck.files.errors import InputError
from claimcheck.measure import server as srv
from tests._cli import cli, make_stand_in, one_line_error

ON = '{"pass_config":{"fuse_allreduce_rms":true}}'
NEEDS = ("runs the engine on more than one GPU, which needs pass_config.fuse_allreduce_rms "
         "false in the compilation config vLLM keeps (its last --compilation-config): add "
         "extra_args ['--compilation-config', '{\"pass_config\":{\"fuse_allreduce_rms\":"
         "false}}'] after any other; vLLM's default all-reduce + RMSNorm fusion may create an "
         "NVLink multicast object")
UNSURE = "the vllm serve command cannot be read for certain: "

CASES = [
    # (id, tensor_parallel_size field, extra_args, the refusal)
    ("second --compilation-config turns the fusion back on", 2,
     ["--compilation-config", FUSION_OFF, "--compilation-config", ON],
     f"'--tensor-parallel-size 2' {NEEDS} (vLLM would keep '--compilation-config {ON}')"),
    ("-cc after --compilation-config", 2, ["--compilation-config", FUSION_OFF, "-cc", ON],
     f"'--tensor-parallel-size 2' {NEEDS} (vLLM would keep '-cc {ON}')"),
    ("-O with a JSON value", 2, ["--compilation-config", FUSION_OFF, "-O", ON],
     f"{UNSURE}'-O {ON}': vLLM 0.26 reads -O only as --optimization-level 0-3; give a "
     "compilation config as --compilation-config JSON"),
    ("-O.key form", 2, ["--compilation-config", FUSION_OFF,
                        "-O.pass_config.fuse_allreduce_rms", "true"],
     f"{UNSURE}'-O.pass_config.fuse_allreduce_rms': vLLM 0.26 reads it as "
     "--optimization-level '.pass_config.fuse_allreduce_rms', not a level 0-3 (a "
     "compilation config is given as --compilation-config JSON)"),
    ("TP only in extra_args: --tensor-parallel-size 2", 1, ["--tensor-parallel-size", "2"],
     f"'--tensor-parallel-size 2' {NEEDS}"),
    ("TP only in extra_args: -tp 2", 1, ["-tp", "2"], f"'-tp 2' {NEEDS}"),
    ("TP only in extra_args: --tensor-parallel-size=2", 1, ["--tensor-parallel-size=2"],
     f"'--tensor-parallel-size=2' {NEEDS}"),
    ("TP only in extra_args: -tp=2", 1, ["-tp=2"], f"'-tp=2' {NEEDS}"),
    ("TP with underscores", 1, ["--tensor_parallel_size", "2"],
     f"'--tensor-parallel-size 2' {NEEDS}"),
    ("PP only in extra_args", 1, ["-pp", "2"], f"'-pp 2' {NEEDS}"),
    ("DP only in extra_args", 1, ["--data-parallel-size=2"],
     f"'--data-parallel-size=2' {NEEDS}"),
    ("abbreviated --tensor", 1, ["--tensor", "2"],
     f"{UNSURE}'--tensor' abbreviates --tensor-parallel-size (vLLM's argparse accepts "
     "prefixes); write the option in full"),
    ("abbreviated -t", 1, ["-t", "2"],
     f"{UNSURE}'-t' abbreviates --tensor-parallel-size (vLLM's argparse accepts prefixes); "
     "write the option in full"),
    ("abbreviated --compilation", 2, ["--compilation", FUSION_OFF],
     f"{UNSURE}'--compilation' abbreviates --compilation-config (vLLM's argparse accepts "
     "prefixes); write the option in full"),
    ("dotted --compilation-config.key", 2,
     ["--compilation-config", FUSION_OFF, "--compilation-config.mode", "3"],
     f"{UNSURE}'--compilation-config.mode': dotted forms of --compilation-config are merged "
     "by vLLM after all other options; give the whole value as one JSON"),
    ("dotted abbreviation -c.key", 2, ["-cc", FUSION_OFF, "-c.pass_config.x", "1"],
     f"{UNSURE}'-c.pass_config.x': dotted forms of --compilation-config are merged by vLLM "
     "after all other options; give the whole value as one JSON"),
    ("an options file", 1, ["--config", "more.yaml"],
     f"{UNSURE}'--config' reads vLLM options from a file the guard does not read; put them "
     "in the engine's fields and extra_args"),
    ("a size that is not a plain integer", 1, ["-tp", "2k"],
     f"{UNSURE}'-tp 2k': the size is not a plain integer"),
    ("a repeated JSON key", 2,
     ["-cc", '{"pass_config":{"fuse_allreduce_rms":false,"fuse_allreduce_rms":true}}'],
     f"{UNSURE}'-cc {{\"pass_config\":{{\"fuse_allreduce_rms\":false,\"fuse_allreduce_rms\""
     ":true}}': the JSON repeats the key 'fuse_allreduce_rms' (which one vLLM keeps is not "
     "certain)"),
    ("TP set by extra_args against the field (fusion off)", 1,
     ["-tp", "2", "-cc", FUSION_OFF],
     "extra_args '-tp 2' sets the tensor-parallel size to 2 but tensor_parallel_size is 1: "
     "its runs would record a layout they did not run; set tensor_parallel_size and drop the "
     "option from extra_args"),
    ("the last -tp wins over the field", 2, ["-cc", FUSION_OFF, "-tp", "1"],
     "extra_args '-tp 1' sets the tensor-parallel size to 1 but tensor_parallel_size is 2: "
     "its runs would record a layout they did not run; set tensor_parallel_size and drop the "
     "option from extra_args"),
    ("mnnvl in extra_args", 1, ["--all2all-backend", "mnnvl"],
     "'mnnvl' names the mnnvl all-reduce backend, which uses NVLink multicast"),
]
IDS = [c[0] for c in CASES]

ACCEPTED = [
    (2, ["--compilation-config", ON, "--compilation-config", FUSION_OFF]),  # last one wins
    (2, ["-cc", FUSION_OFF, "-O3"]),
    (2, ["-O", "2", f"--compilation-config={FUSION_OFF}"]),
    (1, ["-O3", "--data-parallel-size-local", "1", "-dpl", "1"]),  # other options, not sizes
    (1, ["-tp", "1"]),
]


def engines_file(tmp_path, tp, extra, name="e"):
    p = tmp_path / "engines.yaml"
    p.write_text(f"engines:\n  {name}:\n    description: d\n    model: m\n    weights: dummy\n"
                 f"    served_model_name: s\n    tensor_parallel_size: {tp}\n"
                 f"    extra_args: {json.dumps(extra)}\n", encoding="utf-8")
    return p


@pytest.fixture
def stand_in(tmp_path):
    """A ``vllm`` first on PATH that leaves a mark when anything runs it."""
    return make_stand_in(tmp_path)


@pytest.mark.parametrize(("tp", "extra", "why"), [c[1:] for c in CASES], ids=IDS)
def test_the_engines_loader_refuses_each_bypass(tmp_path, tp, extra, why):
    p = engines_file(tmp_path, tp, extra)
    with pytest.raises(InputError) as e:
        load_engines(p)
    assert str(e.value) == f"{p}: engines.e: {why}"


@pytest.mark.parametrize(("tp", "extra"), ACCEPTED)
def test_what_vllm_reads_as_safe_is_accepted(tmp_path, tp, extra):
    assert load_engines(engines_file(tmp_path, tp, extra))["e"].tensor_parallel_size == tp


@pytest.mark.parametrize(("tp", "extra", "why"), [CASES[i][1:] for i in (0, 2, 4, 5, 6)],
                         ids=[IDS[i] for i in (0, 2, 4, 5, 6)])
@pytest.mark.parametrize("command", ["serve", "measure"])
def test_serve_and_measure_refuse_in_one_line_and_start_nothing(tmp_path, stand_in, command,
                                                                tp, extra, why):
    p = engines_file(tmp_path, tp, extra)
    state = tmp_path / "state"
    args = (["serve", "--engine", "e", "--engines-file", p, "--state", state]
            if command == "serve" else
            ["measure", "--card", "cpu", "--engine", "e", "--protocol", "decode-rows",
             "--engines-file", p, "--state", state, "--runs-dir", tmp_path / "runs"])
    r = _cli_on_path(args, stand_in)
    assert one_line_error(r) == f"claimcheck: error: {p}: engines.e: {why}"
    assert not stand_in["mark"].exists() and not state.exists()
    assert not (tmp_path / "runs").exists()


def _cli_on_path(args, stand_in):
    """``claimcheck ARGS`` (:func:`tests._cli.cli`) with the stand-in ``vllm`` first on PATH."""
    old = os.environ["PATH"]
    os.environ["PATH"] = stand_in["path"]
    try:
        return cli(*args)
    finally:
        os.environ["PATH"] = old


def test_predict_refuses_an_engine_of_the_engines_file(tmp_path, monkeypatch, capsys):
    (tmp_path / "engines.yaml").write_text(
        engines_file(tmp_path, 1, ["-tp", "2"]).read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(config_loaders, "CONFIG", tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    assert main(["predict", "--card", "h200", "--engine", "e", "--protocol", "decode-rows",
                 "--runs", str(runs)]) == 2
    assert capsys.readouterr().err == (
        f"claimcheck: error: {tmp_path / 'engines.yaml'}: engines.e: '-tp 2' {NEEDS}\n")


@pytest.mark.parametrize(("tp", "extra", "why"), [c[1:] for c in CASES[:19]], ids=IDS[:19])
def test_starting_a_server_refuses_the_argv_itself_and_runs_nothing(tmp_path, stand_in, tp,
                                                                     extra, why):
    """The last line: whatever built the argv, ``server.start`` reads it as vLLM will and
    starts nothing (no process, no log) when it could use multicast."""
    argv = [stand_in["exe"], "serve", "m", "--port", "1"]
    if tp > 1:
        argv += ["--tensor-parallel-size", str(tp)]
    argv += extra
    log = tmp_path / "logs" / "server.log"
    with pytest.raises(InputError) as e:
        srv.start(argv, log, base_url="http://127.0.0.1:1", engine="e")
    assert str(e.value) == f"the vllm serve command: engines.e: refusing to start: {why}"
    assert not log.parent.exists() and not stand_in["mark"].exists()


def test_the_python_m_form_is_read_too(tmp_path):
    argv = [sys.executable, "-m", "vllm.entrypoints.cli.main", "serve", "m", "-tp", "2"]
    with pytest.raises(InputError, match="refusing to start: '-tp 2' runs the engine on more"):
        srv.start(argv, tmp_path / "server.log", base_url="http://127.0.0.1:1")
    assert not (tmp_path / "server.log").exists()


def test_mnnvl_in_the_callers_environment_is_refused(tmp_path, stand_in, monkeypatch):
    monkeypatch.setenv("VLLM_ALL2ALL_BACKEND", "mnnvl")
    with pytest.raises(InputError) as e:
        srv.start([stand_in["exe"], "serve", "m"], tmp_path / "server.log",
                  base_url="http://127.0.0.1:1")
    assert str(e.value) == ("the vllm serve command: refusing to start: env "
                            "VLLM_ALL2ALL_BACKEND='mnnvl' names the mnnvl all-reduce backend, "
                            "which uses NVLink multicast")
    assert not stand_in["mark"].exists()


def test_the_committed_engines_pass_on_their_exact_command():
    for e in load_engines().values():
        args = core_engines.server_argv(e, vllm=["vllm"], host="h", port=1,
                                        tokenizer_dir="/t")[2:]
        assert multicast_refusal(args, MULTICAST_OFF) is None, e.name
