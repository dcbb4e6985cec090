"""The run record: ``provenance.json`` and ``steps.json`` of a run directory, checked
against a JSON schema (:func:`check_schema`) and read into typed dataclasses.

Pure: objects in, objects out (the run's Protocol from its record too,
:func:`protocol_from_record`). The schemas shipped in ``claimcheck/schemas`` are read, and
records validated with them, by :mod:`claimcheck.runs.records` (the runner on what it
writes, the readers on what they read, after :func:`migrate_provenance`, which fills fields
older runs lack, in memory only). Errors are :class:`~claimcheck.files.errors.InputError`
naming the file and the key path.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from claimcheck.config.protocols import Protocol, Step
from claimcheck.files.errors import InputError

SCHEMA_VERSION = "claimcheck.run/1"
STEP_OK = "complete"
INTERRUPTED = "interrupted"
NEVER_ENDED = ("provenance.json still says running: the runner was killed before it could "
               "record its end (or is still running); the steps it recorded are kept")


def check_schema(obj: Any, schema: dict[str, Any], source: str) -> None:
    """Validate ``obj`` against ``schema``; the first error names its key path."""
    validator = jsonschema.Draft202012Validator(schema)
    err = jsonschema.exceptions.best_match(validator.iter_errors(obj))
    if err is not None:
        key = ".".join(str(k) for k in err.absolute_path) or "(top level)"
        raise InputError(source, err.message, key=key)


@dataclass(frozen=True)
class StepRecord:
    """One step as the runner recorded it. Times are Unix seconds."""

    step: int
    repeat: int
    streams: int
    requests: int
    dir: str
    status: str
    reason: str | None = None
    seed: int | str | None = None
    start_unix_s: float | None = None
    end_unix_s: float | None = None
    completed: int | None = None
    failed_requests: int | None = None
    recorded: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The step's record as written, every key (client argv, counters, energy, log offsets,
    ...): what a step reads beyond the fields above (:func:`claimcheck.runs.runload.read_step`)."""

    @property
    def ok(self) -> bool:
        """True only for a step that ran to completion; anything else is never compared
        with a claim nor averaged in."""
        return self.status == STEP_OK


@dataclass(frozen=True)
class Gpu:
    """The first GPU's identity and power limits (W); memory in MiB (2**20 bytes)."""

    name: str | None = None
    power_limit_enforced_w: float | None = None
    power_limit_default_w: float | None = None
    memory_total_mib: float | None = None
    uuid: str | None = None
    """NVML's uuid of the card (tells two cards of one name apart); None where not recorded."""


@dataclass(frozen=True)
class EngineRecord:
    """How the engine was configured (vLLM's own dtype names, "auto" included)."""

    name: str
    weight_format: str
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    mamba_ssm_cache_dtype: str | None = None
    prefix_caching: bool | None = None
    max_num_seqs: int | None = None
    speculative: dict[str, Any] | None = None
    """The drafter (method, num_speculative_tokens, acceptance), None without one."""
    weights: str | None = None
    """The checkpoint the engine served (a Hugging Face repository or a local path), as
    ``engine_config.weights`` records it; None where it is not recorded."""
    tensor_parallel_size: int | None = None
    """GPUs the model is split over by tensor parallelism; None where not recorded (one)."""
    extra_args: tuple[str, ...] = ()
    """The further ``vllm serve`` arguments, in order, each as a string
    (``engine_config.extra_args``)."""
    recorded: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """``engine_config`` as recorded, every key (the typed fields above included): for code
    that takes an engine's configuration whole (the parallel layout, a twin engine's
    fields compared by name); read a field above where there is one."""


@dataclass(frozen=True)
class TelemetrySummary:
    """NVML samples over the whole run: power in W, clocks in MHz, temperature in °C."""

    available: bool = False
    samples: int | None = None
    mean_power_w: float | None = None
    max_power_w: float | None = None
    mean_sm_clock_mhz: float | None = None
    max_temp_c: float | None = None


@dataclass(frozen=True)
class Provenance:
    """A run's provenance.json, typed. ``protocol_config`` is the protocol as recorded
    (read into a Protocol by :func:`protocol_from_record`); ``raw`` is the whole validated
    object."""

    schema: str
    status: str
    card: str
    engine: str
    protocol: str
    profile: str | None
    weights: str
    weights_label: str
    engine_config: EngineRecord
    protocol_config: dict[str, Any]
    gpu: Gpu
    driver_version: str | None
    cuda_driver_version: str | None
    software: dict[str, str | None]
    project_commit: str | None
    started_utc: str
    failure: Any
    telemetry: TelemetrySummary
    steps: tuple[StepRecord, ...]
    raw: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)
    """The whole validated object; read only here and through :attr:`as_recorded`
    (tests/test_provenance_reads.py holds the reads elsewhere to a list that only shrinks):
    every key read elsewhere has a field of its own."""
    run_dir: str | None = None
    """The directory name the runner made for the run (a copied directory names another);
    None in records older than the field."""
    model_config: str | None = None
    """The model's ``config.json`` the run read (a path relative to the repository root, or
    the engine's model name where the runner found no file); None where not recorded."""
    duration_s: float | None = None
    """Seconds from the runner's start to its end (``ended_utc`` - ``started_utc``); None for
    a run that never recorded its end."""
    verify: Mapping[str, Any] | None = None
    """A verify run's predictions, made before it measured and kept as they were
    (``verify``: the predicted steps by index, the protocol's predicted load); None for a
    run not in verify mode."""

    @property
    def dummy(self) -> bool:
        return self.weights == "dummy"

    @property
    def complete(self) -> bool:
        """Whether the run recorded itself complete (status ``complete``)."""
        return self.status == STEP_OK

    @property
    def protocol_name(self) -> str | None:
        """The protocol's name as its recorded configuration gives it (``protocol_config``)."""
        return self.protocol_config.get("name")

    @property
    def protocol_kind(self) -> str | None:
        """How the protocol's streams relate (``protocol_config.kind``: "closed_loop", ...)."""
        return self.protocol_config.get("kind")

    @property
    def as_recorded(self) -> dict[str, Any]:
        """The validated provenance.json object whole, for writing it out as it is (the run
        record, :func:`claimcheck.runs.run.to_record`); never to be read key by key."""
        return self.raw

    def sw(self, name: str) -> str:
        """A software version, or '?' when not recorded."""
        v = self.software.get(name)
        return "?" if v is None else str(v)


def migrate_provenance(obj: Any) -> Any:
    """Fill, in memory, what older records lack (never written back): the schema tag, a
    step's status from its client's return code, the protocol's repeats and report. A run
    whose status is still ``running`` (its runner was killed without a chance to write
    its end) is read as :data:`INTERRUPTED`, with the steps it recorded."""
    if not isinstance(obj, dict):
        return obj
    obj = dict(obj)
    obj.setdefault("schema", SCHEMA_VERSION)
    if obj.get("status") == "running":
        obj["status"] = INTERRUPTED
        obj.setdefault("steps", [])
        obj["failure"] = obj.get("failure") or NEVER_ENDED
    proto = obj.get("protocol_config")
    if isinstance(proto, dict):
        proto = dict(proto)
        proto.setdefault("repeats", 1)
        proto.setdefault("report", "last")
        obj["protocol_config"] = proto
    steps = []
    for s in obj.get("steps") or []:
        if isinstance(s, dict) and "status" not in s:
            s = dict(s)
            ok = s.get("client_returncode") == 0
            s["status"] = STEP_OK if ok else "failed"
            s.setdefault("reason", None if ok else "no status recorded (older run)")
        steps.append(s)
    if "steps" in obj:
        obj["steps"] = steps
    return obj


def step_record(d: dict[str, Any]) -> StepRecord:
    """A step record (one of steps.json, or a step.json) checked by its schema, typed."""
    return StepRecord(step=d["step"], repeat=d["repeat"], streams=d["streams"],
                      requests=d["requests"], dir=d["dir"], status=d["status"],
                      reason=d.get("reason"), seed=d.get("seed"),
                      start_unix_s=d.get("start_unix_s"), end_unix_s=d.get("end_unix_s"),
                      completed=d.get("completed"), failed_requests=d.get("failed_requests"),
                      recorded=d)


def provenance_of(obj: dict[str, Any]) -> Provenance:
    """A provenance.json object checked by its schema, typed (``raw``: the object)."""
    eng = obj["engine_config"]
    gpu_sec = obj.get("gpu") or {}
    gpu = (gpu_sec.get("gpus") or [{}])[0]
    tel = obj.get("telemetry") or {}
    summ = tel.get("summary") or {}
    return Provenance(
        schema=obj["schema"], status=obj["status"], card=obj["card"], engine=obj["engine"],
        protocol=obj["protocol"], profile=obj.get("profile"), weights=obj["weights"],
        weights_label=obj["weights_label"],
        engine_config=EngineRecord(
            name=eng["name"], weight_format=eng["weight_format"],
            quantization=eng.get("quantization"), kv_cache_dtype=eng.get("kv_cache_dtype"),
            mamba_ssm_cache_dtype=eng.get("mamba_ssm_cache_dtype"),
            prefix_caching=eng.get("prefix_caching"), max_num_seqs=eng.get("max_num_seqs"),
            speculative=eng.get("speculative"), weights=eng.get("weights"),
            tensor_parallel_size=eng.get("tensor_parallel_size"),
            extra_args=tuple(str(a) for a in eng.get("extra_args") or ()), recorded=eng),
        protocol_config=obj["protocol_config"],
        gpu=Gpu(name=gpu.get("name"), power_limit_enforced_w=gpu.get("power_limit_enforced_w"),
                power_limit_default_w=gpu.get("power_limit_default_w"),
                memory_total_mib=gpu.get("memory_total_mib"), uuid=gpu.get("uuid")),
        driver_version=gpu_sec.get("driver_version"),
        cuda_driver_version=gpu_sec.get("cuda_driver_version"),
        software=dict(obj.get("software") or {}),
        project_commit=(obj.get("project") or {}).get("commit"),
        started_utc=obj["started_utc"], failure=obj.get("failure"),
        telemetry=TelemetrySummary(
            available=bool(tel.get("available")), samples=summ.get("samples"),
            mean_power_w=summ.get("mean_power_w"), max_power_w=summ.get("max_power_w"),
            mean_sm_clock_mhz=summ.get("mean_sm_clock_mhz"),
            max_temp_c=summ.get("max_temp_c")),
        steps=tuple(step_record(d) for d in obj["steps"]), raw=obj,
        run_dir=obj.get("run_dir"), model_config=obj.get("model_config"),
        duration_s=obj.get("duration_s"), verify=obj.get("verify"))


def protocol_from_record(d: dict[str, Any]) -> Protocol:
    """The Protocol a run recorded (``protocol_config``), through the Protocol and Step
    dataclasses' own fields: keys they do not know are left out; fields the record lacks
    take their defaults, a step's lengths the protocol's (older records), else None."""
    kw: dict[str, Any] = {}
    for f in dataclasses.fields(Protocol):
        if f.name in d:
            kw[f.name] = d[f.name]
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            kw[f.name] = None
    steps = []
    for s in d["steps"]:
        sk: dict[str, Any] = {}
        for f in dataclasses.fields(Step):
            if f.name in s:
                sk[f.name] = s[f.name]
            elif f.name in d:  # per-step lengths default to the protocol's
                sk[f.name] = d[f.name]
            elif f.default is dataclasses.MISSING:
                sk[f.name] = None
        steps.append(Step(**sk))
    kw["steps"] = tuple(steps)
    for k in ("source_claims", "metrics"):
        kw[k] = tuple(kw.get(k) or ())
    kw["description"] = " ".join(str(kw.get("description") or "").split())
    return Protocol(**kw)

