"""The measuring commands: ``claimcheck serve``, ``wait`` and ``stop`` (a detached vLLM
server) and ``claimcheck measure`` (replay protocols on this machine's GPU)."""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path
from typing import Any

from claimcheck.cli.physics import cards_file
from claimcheck.config.configfiles import get_engine, get_protocol
from claimcheck.config.protocols import check_fit
from claimcheck.files.errors import InputError
from claimcheck.files.paths import RUNS
from claimcheck.measure import clientproc, preflight, telemetry
from claimcheck.measure import server as srv
from claimcheck.measure.engines import engine_python, vllm_command
from claimcheck.measure.runner import (
    Interrupted,
    check_run_dir,
    raise_on_signals,
    run_protocol,
    start_engine,
    tokenizer_for,
)
from claimcheck.measure.tokenizer import synthetic_vocab_size
from claimcheck.physics.cardfiles import get_card, load_cards
from claimcheck.physics.cards import detect_card


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``serve``, ``wait``, ``stop`` and ``measure`` commands and their options."""
    s = sub.add_parser("serve", help="start vllm serve for an engine config (detached)")
    s.add_argument("--engine", required=True, help="engine config name (config/engines.yaml)")
    s.add_argument("--engines-file", default=None,
                   help="engine configs to read instead of config/engines.yaml")
    s.add_argument("--state", default=".claimcheck/server", help="server state directory")
    s.add_argument("--port", type=int, default=8000, help="server port (default 8000)")
    s.add_argument("--health-timeout", type=float, default=900, help="seconds")
    s.add_argument("--no-wait", action="store_true", help="return once started")

    s = sub.add_parser("wait", help="wait for a detached server to answer /health")
    s.add_argument("--state", default=".claimcheck/server",
                   help="server state directory written by serve")
    s.add_argument("--health-timeout", type=float, default=900, help="seconds")

    s = sub.add_parser("stop", help="stop a detached server")
    s.add_argument("--state", default=".claimcheck/server",
                   help="server state directory written by serve")

    m = sub.add_parser("measure", help="replay protocols on this machine's GPU")
    m.add_argument("--card", required=True,
                   help="card registry name (rtx3090, h200, ...), auto (NVML's GPU name "
                        "mapped through cards.csv nvml_name), or cpu for a CPU engine; a "
                        "named card is checked against the GPU NVML sees")
    m.add_argument("--engine", required=True, help="engine config name (config/engines.yaml)")
    m.add_argument("--protocol", action="append", required=True,
                   help="protocol name (config/protocols.yaml); repeat for several")
    m.add_argument("--profile", default=None, help="scale protocols (e.g. ci)")
    m.add_argument("--repeats", type=int, default=None,
                   help="override the protocol's repeats (recorded in provenance)")
    g = m.add_mutually_exclusive_group()
    g.add_argument("--attach", default=None, help="state dir of a server started by serve")
    g.add_argument("--base-url", default=None, help="an already running server")
    m.add_argument("--server-log", default=None, help="its log file, with --base-url")
    m.add_argument("--port", type=int, default=8000,
                   help="server port; 0 picks a free one (several jobs on one node)")
    m.add_argument("--state", default=".claimcheck/server",
                   help="state directory for a server this command starts")
    m.add_argument("--runs-dir", default=str(RUNS),
                   help="where new run directories go (default data/raw/runs)")
    m.add_argument("--health-timeout", type=float, default=900, help="seconds")
    m.add_argument("--step-timeout", type=float, default=None,
                   help="seconds per step's client (default: 300 + waves x "
                   "(prompt/10 + output/1), waves = ceil(requests/streams))")
    m.add_argument("--gpus", default=None, help="NVML indices to sample, e.g. 0,1")
    m.add_argument("--protocols-file", default=None,
                   help="protocols to read instead of config/protocols.yaml")
    m.add_argument("--engines-file", default=None,
                   help="engine configs to read instead of config/engines.yaml")
    m.add_argument("--keep-server", action="store_true", help="leave a started server up")
    m.add_argument("--verify", type=int, default=None, metavar="N",
                   help="verify mode: measure only N sampled steps of each protocol (one "
                   "repeat), predicted first from the calibration in --calibration-runs "
                   "(kept in provenance), then set measured against predicted")
    m.add_argument("--calibration-runs", default=None,
                   help="runs that calibrate the model in verify mode (default: --runs-dir)")
    m.add_argument("--one-client-process", action="store_true",
                   help="run every `vllm bench serve` step in one process (saves vLLM's "
                        "import, ~22 s a step on the H200); each step still records its "
                        "exact equivalent command")


def cmd_serve(a: argparse.Namespace) -> int:
    engine = get_engine(a.engine, a.engines_file)
    try:
        start_engine(engine, state_dir=Path(a.state), port=a.port,
                     health_timeout_s=a.health_timeout, wait=not a.no_wait)
    except srv.ServerError as e:
        print(f"claimcheck: error: {e}", file=sys.stderr)
        return 3
    return 0


def cmd_wait(a: argparse.Namespace) -> int:
    s = srv.Server.load(Path(a.state))
    try:
        srv.wait_healthy(s, a.health_timeout)
    except srv.ServerError as e:
        print(f"claimcheck: error: {e}", file=sys.stderr)
        return 3
    s.save(Path(a.state))
    print(f"claimcheck: {s.base_url} healthy", file=sys.stderr)
    return 0


def cmd_stop(a: argparse.Namespace) -> int:
    s = srv.Server.load(Path(a.state))
    if s.pid is None or not s.alive():
        print(f"claimcheck: the server in {a.state} (pid {s.pid}) is not running; "
              "nothing to stop", file=sys.stderr)
        return 0
    if not srv.stop(s, source=str(Path(a.state) / "server.json")):
        print(f"claimcheck: error: pid {s.pid} is still running after SIGTERM and SIGKILL "
              "to its process group", file=sys.stderr)
        return 1
    print(f"claimcheck: stopped pid {s.pid}", file=sys.stderr)
    return 0


def parse_gpus(text: str | None) -> list[int] | None:
    """``--gpus 0,1`` as NVML indices; :class:`InputError` naming the option otherwise.

    Indices past the GPUs NVML sees are refused when NVML is available.
    """
    if text is None:
        return None
    parts = [x.strip() for x in text.split(",")]
    if not all(x.isdigit() for x in parts):
        raise InputError("--gpus", f"wants NVML indices like 0 or 0,1, got {text!r}")
    gpus = [int(x) for x in parts]
    if len(set(gpus)) != len(gpus):
        raise InputError("--gpus", f"repeats an index: {text!r}")
    ok, _ = telemetry.nvml_status()
    if ok:
        n = telemetry.gpu_count()
        bad = [g for g in gpus if g >= n]
        if bad:
            raise InputError("--gpus", f"no GPU {bad[0]}: NVML sees {n} (indices 0-{n - 1})")
    return gpus


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` now (the OS picks it)."""
    import socket

    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def measure_card(requested: str, facts: dict[str, Any], tp: int = 1,
                 user_cards: str | None = None) -> str:
    """The card a measure run records: ``cpu`` as given; ``auto`` from NVML's names of the
    GPUs used; a named card checked against them when NVML answers (the registry and the
    ``user_cards`` file merged over it). Refuses a GPU count below the engine's
    tensor-parallel size."""
    if requested == "cpu":
        return "cpu"
    cards = load_cards(user_path=user_cards)
    if requested != "auto":
        get_card(requested, user_path=user_cards)
    if not facts.get("available"):
        if requested == "auto":
            raise InputError("--card", preflight.gpu_refusal("auto", facts) or "")
        return requested
    names = [g.get("name") or "" for g in facts.get("gpus", [])]
    if len(names) < tp:
        raise InputError("--gpus", f"the engine's tensor_parallel_size is {tp} but "
                         f"{len(names)} GPU(s) are given or visible")
    found = detect_card(names, cards)
    if requested not in ("auto", found):
        raise InputError("--card", f"{requested!r} asked for, but NVML sees "
                         f"{', '.join(sorted(set(names)))} = card {found!r}; --card "
                         f"{found} or --card auto measures the card NVML sees")
    return found


def verify_plans(a: argparse.Namespace, protos: list[Any]
                 ) -> tuple[list[Any], dict[str, dict[str, Any]]]:
    """Verify mode (``--verify N``): each protocol cut to its N sampled steps, and the
    record of every prediction (:func:`claimcheck.predict.verify.plan`), by protocol name."""
    from claimcheck.config.configfiles import load_engines
    from claimcheck.predict import verify as vf
    from claimcheck.runs.run import load_runs
    if a.verify < 1:
        raise InputError("--verify", f"the number of sampled steps must be >= 1, got {a.verify}")
    where = Path(a.calibration_runs or a.runs_dir)
    if not where.is_dir():
        raise InputError("--calibration-runs", f"{where}: no such folder")
    runs = load_runs(where, load_cards(user_path=cards_file(a)))
    engines = load_engines(a.engines_file)
    cut, records = [], {}
    for p in protos:
        c, rec = vf.plan(runs, a.card, a.engine, p, a.verify, engines, cards_file(a))
        cut.append(c)
        records[p.name] = rec
        print(f"claimcheck: verify {p.name}: measuring step(s) {rec['sampled_steps']} of "
              f"{len(p.steps)}, predicting {rec['predicted_steps']} (calibration: "
              f"{rec['engine_run']})", file=sys.stderr)
    return cut, records


def print_verify(run_dir: Path, user_cards: str | None = None) -> None:
    """The verify run's measured steps against their predictions, on stderr (its card read
    from the registry and the ``user_cards`` file merged over it)."""
    from claimcheck.predict import verify as vf
    from claimcheck.runs.run import load_run
    try:
        lines = vf.render(vf.compare(load_run(run_dir, load_cards(user_path=user_cards))))
    except (InputError, ValueError, KeyError) as e:
        lines = [f"verify: no comparison for {run_dir.name}: {e}"]
    for line in lines:
        print(f"claimcheck: {line}", file=sys.stderr)


def check_cited_claims(protos: list[Any], protocols_file: str | None) -> None:
    """Every claim id the protocols cite is in the claims registry: the pipeline's
    registry_check (:func:`claimcheck.config.protocols.check_source_claims`), before a run
    records a protocol whose claims are not there."""
    from claimcheck.claims.registryfiles import load_claims
    from claimcheck.config.protocols import check_source_claims
    from claimcheck.files.paths import CONFIG
    ids = {c["id"] for c in load_claims(cards=set(load_cards()))}
    check_source_claims({p.name: p for p in protos}, ids,
                        str(protocols_file or CONFIG / "protocols.yaml"))


def cmd_measure(a: argparse.Namespace) -> int:
    # Refuse bad input before anything starts. "cpu" names a run with no GPU (CPU engine).
    engine = get_engine(a.engine, a.engines_file)
    if a.step_timeout is not None and not (math.isfinite(a.step_timeout)
                                           and a.step_timeout > 0):
        raise InputError("--step-timeout", f"seconds per step must be a finite number > 0, "
                         f"got {a.step_timeout:g}")
    if Path(a.runs_dir).exists() and not Path(a.runs_dir).is_dir():
        raise InputError("--runs-dir", f"{a.runs_dir} is a file, not a folder for run "
                         "directories")
    gpus = parse_gpus(a.gpus)
    facts = telemetry.gpu_facts(gpus) if a.card != "cpu" else {}
    a.card = measure_card(a.card, facts, engine.tensor_parallel_size, cards_file(a))
    protos = [get_protocol(p, a.protocols_file, a.profile) for p in a.protocol]
    check_cited_claims(protos, a.protocols_file)
    if a.repeats is not None:
        if a.repeats < 1:
            raise InputError("--repeats", f"must be >= 1, got {a.repeats}")
        protos = [dataclasses.replace(p, repeats=a.repeats) for p in protos]
    verify: dict[str, dict[str, Any]] = {}
    if a.verify is not None:  # predicted before anything starts; refused if it cannot be
        protos, verify = verify_plans(a, protos)
    for proto in protos:  # every protocol must fit the engine before anything starts
        check_fit(proto, engine.max_model_len, engine.max_num_seqs, engine.name,
                  str(a.engines_file or "config/engines.yaml"), synthetic_vocab_size(engine))
        check_run_dir(Path(a.runs_dir), a.card, engine.name, proto.name)  # inside --runs-dir
    if a.port == 0:
        a.port = free_port()
    server: srv.Server | None = None
    if a.attach:
        server = srv.Server.load(Path(a.attach))
        if not server.healthy():
            raise InputError(a.attach, f"server at {server.base_url} is not healthy",
                             key="server.json")
    elif a.base_url:
        server = srv.Server(base_url=a.base_url.rstrip("/"), log_path=a.server_log or "",
                            engine=engine.name)
        if not server.healthy():
            raise InputError("--base-url", f"{a.base_url}/health does not answer")
    own = a.attach is None and a.base_url is None
    # what cannot run (no GPU, no vLLM in the engine's python) is refused before any server
    preflight.check(a.card, facts, vllm_command(), own_server=own,
                    kinds=[p.kind for p in protos], one_client_process=a.one_client_process,
                    vllm_version=engine.vllm_version)
    ok, why = telemetry.nvml_status()
    if not ok:
        print(f"claimcheck: warning: {why}; runs will record no GPU telemetry",
              file=sys.stderr)
    tok = tokenizer_for(engine)
    exit_code = 0
    worker = (clientproc.BenchWorker(engine_python(vllm_command()))
              if a.one_client_process else None)
    raise_on_signals()  # SIGTERM (SLURM's time limit) / SIGINT: record, stop, exit 143/130
    try:
        for proto in protos:
            if own and (server is None or not server.alive()):
                try:
                    server = start_engine(engine, state_dir=Path(a.state), port=a.port,
                                          health_timeout_s=a.health_timeout)
                except srv.ServerError as e:
                    print(f"claimcheck: error: {e}", file=sys.stderr)
                    return 3
            assert server is not None
            run_dir, status = run_protocol(protocol=proto, engine=engine, card=a.card,
                                           server=server, runs=Path(a.runs_dir),
                                           tokenizer=tok, gpus=gpus, profile=a.profile,
                                           step_timeout_s=a.step_timeout, worker=worker,
                                           verify=verify.get(proto.name))
            print(f"claimcheck: {proto.name}: {status}: {run_dir}", file=sys.stderr)
            if proto.name in verify:
                print_verify(run_dir, cards_file(a))
            if status != "complete":
                exit_code = 4
                if own and server.alive() and not server.healthy():
                    srv.stop(server)
    except Interrupted as e:
        print(f"claimcheck: {e}; what was measured is kept, the server is stopped",
              file=sys.stderr)
        exit_code = e.code
    finally:
        if worker is not None:
            worker.close()
        if own and server is not None and not a.keep_server:
            srv.stop(server, grace_s=10 if exit_code > 128 else 30)
    return exit_code
