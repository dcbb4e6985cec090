"""Replay a protocol against a vLLM server and record everything that decides the number.

One run directory per (card, date, engine, protocol) run, never overwritten:

    data/raw/runs/<card>-<YYYYMMDD>-<engine>-<protocol>[-N]/
        provenance.json        host, GPU, software, model, weights, commands, env, times
        server-start.log       the server's log up to /health (weights GiB, KV pool ...)
        server.log             the server's log during this run
        telemetry.csv          NVML at 1 Hz (absent when there is no NVML; said in provenance)
        steps/NN-cS-rR/        one `vllm bench serve` call: bench.cols (the result,
                               columnar and xz-compressed at rest; bench.json.xz where
                               that is not exact: runs.runfiles), client.log, step.json
"""

from __future__ import annotations

import datetime as dt
import json
import random
import secrets
import signal
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from claimcheck.config.engines import Engine, server_argv
from claimcheck.config.protocols import Protocol
from claimcheck.files.errors import InputError
from claimcheck.files.paths import DERIVED, ROOT, RUNS
from claimcheck.measure import clientproc, energy, preflight, telemetry
from claimcheck.measure import provenance as prov
from claimcheck.measure import server as srv
from claimcheck.measure.bench import client_argv
from claimcheck.measure.engines import engine_python, vllm_command
from claimcheck.measure.loadclient import synthetic_prompt
from claimcheck.measure.tokenizer import build_synthetic_tokenizer
from claimcheck.physics.modelfiles import load_config
from claimcheck.readings import promtext
from claimcheck.runs import runchecks
from claimcheck.runs.records import validate_provenance, validate_steps
from claimcheck.runs.runfiles import (
    BENCH_MANIFEST,
    compact_bench,
    load_bench,
    replace_atomically,
)


class Interrupted(BaseException):  # noqa: N818 - what happened, like KeyboardInterrupt
    """SIGTERM or SIGINT arrived during a measurement; ``code`` is the exit status the
    shell would show (128 + the signal's number: 143 for SIGTERM, 130 for SIGINT)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.name = signal.Signals(signum).name
        self.code = 128 + signum
        self.step_record: dict[str, Any] | None = None
        super().__init__(f"interrupted by {self.name}")


def raise_on_signals() -> None:
    """From now on the first SIGTERM, SIGINT or SIGHUP (a closed terminal) raises
    :class:`Interrupted` in the main thread, which stops the step's client and the server;
    later ones are ignored, so that writing the run and stopping the server (which take
    seconds) are not cut short."""
    seen: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        if not seen:
            seen.append(signum)
            raise Interrupted(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, handler)


def check_run_dir(runs: Path, card: str, engine: str, protocol: str,
                  today: dt.date | None = None) -> str:
    """The run directory's name (``card-YYYYMMDD-engine-protocol``) once it is sure to be a
    folder of ``runs`` itself; InputError naming --runs-dir otherwise (a name holding
    ``/``, ``..`` or an absolute path). ``measure`` calls it for every protocol before
    anything starts, and :func:`new_run_dir` again: a second wall behind the names'
    check at the CLI (files.names)."""
    day = (today or dt.datetime.now(dt.UTC).date()).strftime("%Y%m%d")
    base = f"{card}-{day}-{engine}-{protocol}"
    if Path(base).name != base or (runs / base).resolve().parent != runs.resolve():
        raise InputError("--runs-dir", f"the run directory {base!r} would not be a folder "
                         f"of {runs}: a card, engine or protocol name holds a path")
    return base


def new_run_dir(runs: Path, card: str, engine: str, protocol: str,
                today: dt.date | None = None) -> Path:
    """Create a fresh run directory inside ``runs`` (:func:`check_run_dir`); an existing
    one is never reused."""
    base = check_run_dir(runs, card, engine, protocol, today)
    runs.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        d = runs / (base if n == 1 else f"{base}-{n}")
        try:
            d.mkdir()
            return d
        except FileExistsError:
            continue
    raise RuntimeError(f"too many runs named {base} in {runs}")


def _one_line(e: BaseException) -> str:
    """An error in one line: an OSError as its file and reason, anything else as it says."""
    if isinstance(e, OSError) and e.strerror:
        return f"cannot write {e.filename or 'a file'}: {e.strerror}"
    return " ".join(str(e).split())


def tokenizer_for(engine: Engine, root: Path = ROOT) -> str | None:
    """The --tokenizer to pass: a synthetic one for dummy weights, else the checkpoint's."""
    if engine.tokenizer != "synthetic":
        return None
    cfg = load_config(engine.config_json(root))  # type: ignore[arg-type]
    vocab = int((cfg.get("text_config") or cfg)["vocab_size"])
    return str(build_synthetic_tokenizer(vocab, DERIVED / "tokenizers" / f"synthetic-{vocab}"))


def _rel(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def _write_json(path: Path, obj: Any) -> None:
    replace_atomically(path, json.dumps(obj, indent=1, default=str))


def _seed(protocol: Protocol) -> int:
    return secrets.randbelow(2**31 - 1) if protocol.seed == "fresh" else int(protocol.seed)


def run_protocol(*, protocol: Protocol, engine: Engine, card: str, server: srv.Server,
                 runs: Path = RUNS, vllm: list[str] | None = None,
                 tokenizer: str | None = None, gpus: list[int] | None = None,
                 profile: str | None = None, root: Path = ROOT,
                 step_timeout_s: float | None = None,
                 worker: clientproc.BenchWorker | None = None,
                 verify: dict[str, Any] | None = None) -> tuple[Path, str]:
    """Run every step x repeat of ``protocol`` against a healthy ``server``; ``verify``
    (verify mode: the predictions made before measuring) is kept in provenance as it is.

    Returns (run directory, status). Status is ``complete`` or ``failed``; a failure keeps
    every result that came back, the logs and the telemetry, and is said in provenance.
    """
    vllm = vllm or vllm_command()
    run_dir = new_run_dir(runs, card, engine.name, protocol.name)
    (run_dir / "steps").mkdir()
    started = time.time()
    log_start = server.log_size()
    if server.healthy_log_offset:
        (run_dir / "server-start.log").write_text(
            server.read_log(0, server.healthy_log_offset))
    cfg_path = engine.config_json(root)
    facts = telemetry.gpu_facts(gpus)
    base: dict[str, Any] = {
        "schema": "claimcheck.run/1", "status": "running", "run_dir": run_dir.name,
        "card": card, "engine": engine.name, "protocol": protocol.name, "profile": profile,
        "weights": "dummy" if engine.dummy else engine.weights.removeprefix("hub:"),
        "weights_label": "dummy weights" if engine.dummy else "real weights",
        "engine_config": {k: v for k, v in engine.__dict__.items()},
        "protocol_config": {**protocol.__dict__,
                            "steps": [s.__dict__ for s in protocol.steps]},
        "model_config": _rel(cfg_path, root) if cfg_path else engine.model,
        "model_config_sha256": prov.sha256_file(cfg_path) if cfg_path else None,
        "tokenizer": tokenizer or "checkpoint",
        "server": server.to_record(),
        "gpu": facts, "host": prov.host(), "project": prov.project_git(root),
        "environment": prov.relevant_env(),
        "started_utc": dt.datetime.fromtimestamp(started, dt.UTC).isoformat(),
    }
    if verify is not None:
        base["verify"] = verify
    _write_json(run_dir / "provenance.json", base)
    steps: list[dict[str, Any]] = []
    status, reason = "complete", None
    stopped: BaseException | None = None
    sampler = telemetry.Sampler(run_dir / "telemetry.csv", gpus)
    if not sampler.available:
        print(f"claimcheck: no GPU telemetry: {sampler.reason}", file=sys.stderr)
    plan = [(i, step, rep) for i, step in enumerate(protocol.steps)
            for rep in range(1, protocol.repeats + 1)]
    try:
        base["software"] = prov.software(engine_python(vllm))
        # the runner's own interpreter (NVML sampling, load client) when it is another one
        base["runner_software"] = (prov.software(sys.executable)
                                   if engine_python(vllm) != sys.executable else "software")
        with sampler:
            for i, step, rep in plan:
                try:  # a write that fails (disk full, permission) fails the run here
                    rec = _run_step(protocol, step, i, rep, run_dir, server, vllm, engine,
                                    tokenizer or engine.model, step_timeout_s, gpus, worker)
                    print(f"claimcheck: {protocol.name} step {i + 1}/{len(protocol.steps)} "
                          f"repeat {rep}/{protocol.repeats}: {rec.get('completed')} of "
                          f"{step.requests} requests done, {rec['status']}, "
                          f"{rec['end_unix_s'] - rec['start_unix_s']:.0f} s (run "
                          f"{time.time() - started:.0f} s)", file=sys.stderr, flush=True)
                    steps.append(rec)
                    _write_json(run_dir / "steps.json", steps)
                    # what a hard kill (SIGKILL) would leave: the steps so far, "running"
                    _write_json(run_dir / "provenance.json", {**base, "steps": steps})
                except (OSError, InputError) as e:
                    status, reason = "failed", f"step {i + 1} repeat {rep}: {_one_line(e)}"
                    print(f"claimcheck: {protocol.name}: {reason}; the steps before it are "
                          "kept", file=sys.stderr, flush=True)
                    break
                if rec["status"] != "complete":
                    status, reason = "failed", rec["reason"]
                    break
    except (Interrupted, KeyboardInterrupt) as e:
        stopped = e
        status, reason = "interrupted", interrupted_reason(e, steps, len(plan))
    ended = time.time()
    try:
        replace_atomically(run_dir / "server.log", server.read_log(log_start))
    except OSError as e:  # the record below may still fit (a few kB)
        status = "failed" if status == "complete" else status
        reason = "; ".join(r for r in (reason, f"server.log: {_one_line(e)}") if r)
        print(f"claimcheck: {protocol.name}: {_one_line(e)}", file=sys.stderr, flush=True)
    base.update({
        "status": status, "failure": reason, "steps": steps,
        "ended_utc": dt.datetime.fromtimestamp(ended, dt.UTC).isoformat(),
        "duration_s": round(ended - started, 3),
        "telemetry": {**telemetry.provenance_record(sampler),
                      "interval_s": sampler.interval_s},
        "server_alive_at_end": server.alive() and server.healthy(),
    })
    schema_error = _record_problem(base, steps, run_dir)
    if schema_error:  # checked before the one end write: the record never says complete
        print(f"claimcheck: error: the run record does not match its schema: {schema_error}",
              file=sys.stderr)
        status = "failed"
        base.update({"status": status, "failure": "the run record does not match its "
                     f"schema: {schema_error}"})
    try:
        _write_json(run_dir / "provenance.json", base)  # first: nothing measured is lost
    except OSError as e:  # not even the record fits: the last one written stays
        print(f"claimcheck: {protocol.name}: the run's end is not recorded: {_one_line(e)}; "
              "provenance.json keeps the steps recorded before it (status running)",
              file=sys.stderr, flush=True)
        if stopped is not None:
            raise stopped from None
        return run_dir, "failed"
    if status == "interrupted" and steps:  # the cut step's record, as provenance.json has it
        try:
            _write_json(run_dir / "steps.json", steps)
        except OSError as e:
            print(f"claimcheck: {protocol.name}: steps.json keeps the complete steps only: "
                  f"{_one_line(e)}", file=sys.stderr, flush=True)
    if stopped is not None:
        raise stopped  # everything measured is written; no further protocol
    return run_dir, status


def _record_problem(base: dict[str, Any], steps: list[dict[str, Any]], run_dir: Path) -> str:
    """What the end record's schema (claimcheck/schemas/provenance.schema.json, steps too)
    refuses in the record as it will be written (JSON, ``default=str`` as
    :func:`_write_json` writes it), in one line; "" when it passes."""
    try:
        validate_provenance(json.loads(json.dumps(base, default=str)),
                            str(run_dir / "provenance.json"))
        validate_steps(json.loads(json.dumps(steps, default=str)),
                       str(run_dir / "steps.json"))
    except InputError as e:
        return _one_line(e)
    return ""


def interrupted_reason(e: BaseException, steps: list[dict[str, Any]], planned: int) -> str:
    """The run's failure when a signal stopped it; appends the interrupted step's record
    (kept on the exception by :func:`_run_step`) to ``steps``."""
    name = getattr(e, "name", "SIGINT")
    rec = getattr(e, "step_record", None)
    done = sum(s["status"] == "complete" for s in steps)
    if rec is not None:
        steps.append(rec)
        where = f"during step {len(steps)} of {planned} ({rec['dir']})"
    else:
        where = (f"outside a step's client run (after {len(steps)} of {planned} steps were "
                 "recorded)")
    return (f"interrupted by {name} {where}; the {done} complete step(s) before it are "
            "kept")


def _run_step(protocol: Protocol, step: Any, i: int, rep: int, run_dir: Path,
              server: srv.Server, vllm: list[str], engine: Engine, tokenizer: str,
              timeout_s: float | None, gpus: list[int] | None = None,
              worker: clientproc.BenchWorker | None = None) -> dict[str, Any]:
    sdir = run_dir / "steps" / f"{i:02d}-c{step.streams}-r{rep}"
    sdir.mkdir(parents=True)
    seed = _seed(protocol)
    argv = client_argv(protocol, step, vllm=vllm, base_url=server.base_url,
                       model=engine.served_model_name, tokenizer=tokenizer, seed=seed,
                       result_dir=str(sdir), max_model_len=engine.max_model_len)
    rec: dict[str, Any] = {"step": i, "repeat": rep, "streams": step.streams,
                           "requests": step.requests, "input_len": step.input_len,
                           "output_len": step.output_len, "reference": step.reference,
                           "kind": protocol.kind, "seed": seed, "dir": sdir.name,
                           "client_argv": argv, "client_command": " ".join(argv),
                           "server_log_offset_start": server.log_size()}
    if not server.alive() or not server.healthy():
        rec.update(status="failed", reason="server not healthy before the step",
                   start_unix_s=time.time(), end_unix_s=time.time())
        _write_json(sdir / "step.json", rec)
        return rec
    if timeout_s is None:
        timeout_s = clientproc.default_timeout_s(step.requests, step.streams, step.input_len,
                                                 step.output_len)
        rec["client_timeout_rule"] = clientproc.TIMEOUT_RULE
    rec["client_timeout_s"] = timeout_s
    counters0 = read_counters(server)
    e0 = energy.read_energy_mj(gpus)
    rec["start_unix_s"] = time.time()
    print(f"claimcheck: {protocol.name} step {i + 1}/{len(protocol.steps)} ({step.streams} "
          f"streams, {step.requests} requests, {step.input_len} + {step.output_len} tokens) "
          f"repeat {rep}/{protocol.repeats}", file=sys.stderr, flush=True)
    args = clientproc.bench_args(argv) if worker is not None else None
    try:
        if worker is not None and args is not None:
            rc = worker.run(args, sdir / "client.log", timeout_s)
            rec["client_process"] = ("claimcheck.measure.benchworker: vllm.benchmarks.serve."
                                     "main (what `vllm bench serve` calls) in one process for "
                                     f"every step, step {worker.steps} of that process")
        else:
            rc = clientproc.run_subprocess(argv, sdir / "client.log", timeout_s)
    except (Interrupted, KeyboardInterrupt) as e:
        rec.update(end_unix_s=time.time(), status="interrupted", server_healthy_after=None,
                   reason=f"interrupted by {getattr(e, 'name', 'SIGINT')} while the client "
                   "ran; the client was stopped and its requests are not counted")
        _write_json(sdir / "step.json", rec)
        if isinstance(e, Interrupted):
            e.step_record = rec
        raise
    rec["end_unix_s"] = time.time()
    e1 = energy.read_energy_mj(gpus)
    rec["server_counters"] = {
        "source": "GET /metrics right before and after the client's run: every vllm:* "
                  "counter (_total) and histogram sum and count (_sum, _count), "
                  "model_name label dropped (readings.promtext)",
        "before": counters0, "after": read_counters(server)}
    rec["energy"] = {"start": e0, "end": e1, "joules": energy.window_energy_j(e0, e1),
                     "source": "nvmlDeviceGetTotalEnergyConsumption over the client's run"}
    rec["client_returncode"] = rc
    rec["server_log_offset_end"] = server.log_size()
    result_path = sdir / "bench.json"
    problems = []
    if rc is None:
        problems.append(f"client timed out after {timeout_s} s")
    elif rc != 0:
        client = "vllm bench serve" if protocol.kind == "bench" else "the load client"
        problems.append(f"{client} exited with code {rc}")
    if result_path.exists():
        res = load_bench(result_path)
        # kept at rest as bench.cols or bench.json.xz, its bytes recorded in the runs
        # folder's manifest (runs.runfiles), which every reader checks it against
        compact_bench(sdir, sdir.parents[2] / BENCH_MANIFEST)
        failed = res.get("failed") or 0
        rec["completed"] = res.get("completed")
        rec["failed_requests"] = failed
        if failed:
            errs = [e for e in res.get("errors", []) if e]
            problems.append(f"{failed} of {step.requests} requests failed"
                            + (f" (first error: {errs[0][:200]})" if errs else ""))
            rec["server_error_probe"] = probe_failure(server, engine, step)
        lengths = runchecks.output_length_problem(
            res, requests=step.requests, output_len=step.output_len,
            ignore_eos=protocol.ignore_eos)
        if lengths:
            problems.append(lengths)
    else:
        problems.append(f"no {result_path.name} was written")
    alive = server.alive() and server.healthy()
    rec["server_healthy_after"] = alive
    if not alive:
        cause = server.cause()
        problems.append("server not healthy after the step" + (f": {cause}" if cause else ""))
    rec["status"] = "failed" if problems else "complete"
    rec["reason"] = "; ".join(problems) or None
    _write_json(sdir / "step.json", rec)
    return rec


def read_counters(server: srv.Server, timeout_s: float = 10) -> dict[str, Any]:
    """The server's vLLM counters now (``GET /metrics``, :func:`promtext.counters`), or
    ``{"error": why}``: a reading that fails never fails the step."""
    try:
        with urllib.request.urlopen(server.base_url + "/metrics", timeout=timeout_s) as r:
            text = r.read().decode(errors="replace")
        return {"unix_s": time.time(), "counters": promtext.counters(text)}
    except Exception as e:  # noqa: BLE001 - evidence beside the step, never its outcome
        return {"error": f"{type(e).__name__}: {e}"}


def probe_failure(server: srv.Server, engine: Engine, step: Any,
                  timeout_s: float = 120) -> dict[str, Any]:
    """Re-send one request of the step's shape (non-streamed) and keep the server's own
    answer: ``vllm bench serve`` records only "Bad Request" for a rejected request."""
    body = {"model": engine.served_model_name, "max_tokens": step.output_len,
            "prompt": synthetic_prompt(step.input_len, random.Random(0)), "ignore_eos": True}
    req = urllib.request.Request(server.base_url + "/v1/completions",
                                 data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    out: dict[str, Any] = {"request": {k: v for k, v in body.items() if k != "prompt"},
                           "prompt_words": step.input_len}
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            out.update(status=r.status, body=r.read(4000).decode(errors="replace"))
    except urllib.error.HTTPError as e:
        out.update(status=e.code, body=e.read(4000).decode(errors="replace"))
    except Exception as e:  # noqa: BLE001 - the probe only adds evidence
        out.update(status=None, body=f"{type(e).__name__}: {e}")
    return out


def start_engine(engine: Engine, *, state_dir: Path, port: int, host: str = "127.0.0.1",
                 vllm: list[str] | None = None, health_timeout_s: float = 900,
                 wait: bool = True, root: Path = ROOT) -> srv.Server:
    """Start ``vllm serve`` for an engine config, detached, and (optionally) wait for it."""
    url = f"http://{host}:{port}"
    if srv.Server(base_url=url, log_path="").healthy():
        raise srv.ServerError(f"something already answers at {url}/health; stop it or "
                              "attach to it with --attach/--base-url")
    vllm = vllm or vllm_command()
    preflight.check_version(vllm, engine.vllm_version)
    tok = tokenizer_for(engine, root)
    argv = server_argv(engine, vllm=vllm, host=host, port=port,
                       tokenizer_dir=tok, root=root)
    state_dir.mkdir(parents=True, exist_ok=True)
    log = state_dir / f"server-{int(time.time())}.log"
    s = srv.start(argv, log, env=engine.env, base_url=url,
                  engine=engine.name)
    s.save(state_dir)
    print(f"claimcheck: started vllm serve (pid {s.pid}), log {log}", file=sys.stderr)
    if wait:
        try:
            srv.wait_healthy(s, health_timeout_s)
        except (srv.ServerError, Interrupted, KeyboardInterrupt):
            srv.stop(s, grace_s=10)  # a server this call started is never left running
            raise
        s.save(state_dir)
        print(f"claimcheck: healthy after {s.healthy_unix_s - s.started_unix_s:.0f} s",
              file=sys.stderr)
    return s
