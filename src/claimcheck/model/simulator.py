"""The step model simulated over a protocol's requests: vLLM's V1 scheduler step by step
(running requests first, one decode token each or their next prefill chunk; then waiting
requests admitted while slots, the token budget and the KV pool last), each step priced by
:func:`claimcheck.model.model.step_cost` (times the decode-row factor when it only decodes),
runs of decode-only steps fast-forwarded. Clients are a closed loop of C streams; a wave's
requests reach the scheduler one admission interval apart; a token sampled at the end of a
step that another follows at once reaches its client the calibrated share of that next step
late (the output lag). The simulated requests become a
:class:`~claimcheck.readings.timeline.Timeline`. Pure; seconds and tokens."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from claimcheck.model.model import (
    Calibration,
    EngineShape,
    StepCost,
    aligned_chunk,
    bend_seconds,
    mixed_cost,
    row_factor,
    sequence_cost,
    step_cost,
    step_cost_sum,
)
from claimcheck.physics.formats import row_bucket
from claimcheck.readings.timeline import RequestTimeline, Timeline


@dataclass
class _Req:
    """One simulated request: its prompt and output lengths (tokens), when its client sent
    it and when it reaches the scheduler (s), prompt tokens computed so far, and the times
    of its tokens (s)."""

    idx: int
    prompt: int
    output: int
    sent: float
    arrival: float
    prefilled: int = 0
    times: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Simulation:
    """A simulated step: its timeline and where the time went (s)."""

    timeline: Timeline
    engine_steps: int
    time_s: dict[str, float]
    """Simulated time by the term that bounded each step: ``memory``, ``compute``, ``idle``."""
    memory_parts_s: dict[str, float]
    """Memory-term time split into weights, state and KV (over memory-bound steps)."""

    @property
    def bound(self) -> str:
        """The term that bounded most of the simulated time."""
        return max(("memory", "compute"), key=lambda k: self.time_s[k])


def request_pages(shape: EngineShape, tokens: int) -> int:
    """The KV pool's pages a request of ``tokens`` (prompt and output) holds: its tokens in
    whole pages of ``shape.kv_page_tokens`` in each attention group and one page for its
    recurrent state in each state group (vLLM's hybrid pool; the measured usage on the
    H100, 1.105% of 363 pages per 640-token request, 5.1% of 374 per 12,200, fits it);
    its tokens when pages are tokens. Held in full from its admission: vLLM allocates as a
    request grows and preempts when the pool runs out, which the runs it is read off
    never did (``vllm:num_preemptions`` 0)."""
    page = shape.kv_page_tokens
    if not page:
        return tokens
    return pages_held(tokens, page, shape.kv_attention_groups, shape.kv_state_groups)


def pages_held(tokens: int, page: int, attention_groups: int, state_groups: int) -> int:
    """Pages a request of ``tokens`` holds in vLLM's hybrid pool: ceil(tokens / ``page``)
    in each attention group and one in each state group."""
    return attention_groups * -(-tokens // page) + state_groups


def decode_row_factor(points: tuple[tuple[int, float], ...], rows: int,
                      buckets: tuple[int, ...] = ()) -> float:
    """The decode-row factor of a plain decode-only step of ``rows`` rows: :func:`row_factor`
    between the measured row counts of ``points``; below the fewest, linear from 1 at one
    row (the step the bandwidth is calibrated on); above the most, the last factor (held
    out, Marlin's 56- and 64-row steps read +21-25% at 1 past its 48 measured rows). With
    the GEMM's row ``buckets`` (``Calibration.row_buckets``), only the measured counts in
    ``rows``' own bucket are read, where it has any, below its fewest its fewest's (the line
    from 1 at one row is the first bucket's only); held out, the FP8 engine's 16-row step
    read -10% on decode from its 8- and 24-row factors across the bound at 16."""
    if buckets:
        own = row_bucket(buckets, rows)
        same = tuple(p for p in points if row_bucket(buckets, p[0]) == own)
        if same:
            if own > 0 and rows < same[0][0]:  # one row is in the first bucket only
                return same[0][1]
            points = same
    if not points:
        return 1.0
    if rows > points[-1][0]:
        return points[-1][1]
    if rows < points[0][0]:
        return row_factor(((1, 1.0), points[0]), rows)
    return row_factor(points, rows)


def _decode_factor(cal: Calibration, rows: int) -> float:
    """The decode-row factor of a decode-only step of ``rows`` rows (:func:`decode_row_factor`);
    1.0 when none is measured (a step time times 1.0 is that time, exactly)."""
    return (decode_row_factor(cal.row_factors, rows, cal.row_buckets) if cal.row_factors
            else 1.0)


def _decode_pricer(cal: Calibration, rows: int) -> Callable[[StepCost], float]:
    """How a decode-only step of ``rows`` rows is timed from its cost, worked out once per
    row count: the cost's time x the decode-row factor at ``rows`` (:func:`_decode_factor`);
    with a bend exponent and no measured factor, the bend's
    (:func:`~claimcheck.model.model.bend_seconds`)."""
    p = cal.bend_exponent
    if p is not None and not cal.row_factors:
        return lambda cost: bend_seconds(cost.memory_s, cost.compute_s, p)
    factor = _decode_factor(cal, rows)
    return lambda cost: cost.time_s * factor


def decode_step_seconds(shape: EngineShape, cal: Calibration, rows: int,
                        context_sum: int) -> float:
    """The simulator's time for one decode-only step of ``rows`` requests whose contexts sum
    to ``context_sum`` tokens after it: :func:`step_cost_sum` priced as the simulation
    prices such a step (:func:`_decode_pricer`: the decode-row factor, or the bend)."""
    return _decode_pricer(cal, rows)(step_cost_sum(shape, cal, rows, context_sum, rows, rows))


def _price(shape: EngineShape, cal: Calibration, sched: list[tuple[_Req, int]]
           ) -> tuple[StepCost, float]:
    """Price one scheduled step ((request, new positions) pairs): its :func:`step_cost`
    over the requests' contexts after the step, the positions in all and the sampled ones
    (a request sampling a token: decoding, or finishing its prompt), and its time in s,
    the cost's times the decode-row factor when the step only decodes."""
    contexts, tokens, sampled, prompt = [], 0, 0, 0
    for r, n in sched:
        contexts.append(r.prefilled + len(r.times) + n)
        tokens += n
        if r.prefilled < r.prompt:  # a prompt chunk
            prompt += n
        if r.prefilled >= r.prompt or r.prefilled + n == r.prompt:
            sampled += 1
    cost = step_cost(shape, cal, contexts, tokens, sampled, prompt)
    if cal.mixed_prefill_factor != 1.0 and len(sched) > 1 and any(
            r.prefilled < r.prompt for r, _ in sched):  # a prompt chunk beside other requests
        cost = mixed_cost(cost, cal.mixed_prefill_factor)
    step_s = cost.time_s
    if tokens == sampled == len(sched):  # a decode-only step
        step_s = _decode_pricer(cal, len(sched))(cost)
    elif cal.sequence_prefill_s:  # each request with a prompt chunk in the step
        step_s = sequence_cost(step_s, sum(r.prefilled < r.prompt for r, _ in sched),
                               cal.sequence_prefill_s)
    return cost, step_s


@dataclass
class _Loop:
    """The simulation's state: requests not yet sent (``pending``, indices), those sent
    (``waiting``, in arrival order), scheduled (``running``) and finished (``done``); the
    clock ``t`` (s); the steps taken and where their time went (s)."""

    shape: EngineShape
    cal: Calibration
    prompts: list[int]
    outputs: list[int]
    pending: deque[int]
    waiting: deque[_Req] = field(default_factory=deque)
    running: list[_Req] = field(default_factory=list)
    done: list[_Req] = field(default_factory=list)
    t: float = 0.0
    steps: int = 0
    spent: dict[str, float] = field(
        default_factory=lambda: {"memory": 0.0, "compute": 0.0, "idle": 0.0})
    parts: dict[str, float] = field(
        default_factory=lambda: {"weights": 0.0, "state": 0.0, "kv": 0.0})
    reserved: int = 0
    """Pages of the KV pool the running requests hold: each its prompt and output in full
    from its admission (:meth:`fits`)."""
    wave_t: float = 0.0
    """When the latest requests were sent; ``wave_n`` of them after the first were sent then."""
    wave_n: int = 0
    keep_next: bool = False
    """Whether :meth:`took` keeps ``next_step_s`` (an output lag to apply, or the first
    token's next step asked for); off, the fast path adds nothing per step."""
    next_step_s: dict[float, float] = field(default_factory=dict)
    """For each step end (s) at which the next step began at once, that next step's length
    (s): where the output lag (:meth:`seen`) applies."""
    last_step: tuple[float, float] = (0.0, -1.0)
    """The latest step's (length, end), s."""

    def send_first_wave(self, streams: int, cold_s: float = 0.0) -> None:
        """Each of the ``streams`` clients sends one request at 0 s (one wave): the k-th
        reaches the scheduler after k admission intervals, and ``cold_s`` later on a
        freshly started engine (its per-request overhead is spent in the step that admits
        it into the idle engine: :meth:`step`)."""
        gap = self.cal.admission_interval_s
        for k in range(min(streams, len(self.prompts))):
            i = self.pending.popleft()
            self.waiting.append(_Req(i, self.prompts[i], self.outputs[i], 0.0,
                                     cold_s + k * gap))

    def finish(self, r: _Req) -> None:
        """``r`` is done at ``t``: its client sends the next request, if any, once it sees
        the last token (the output lag's share of a step later while requests that have
        not finished keep the engine stepping, the step that sampled it standing in for
        the next one), and that request reaches the scheduler one admission interval later,
        plus one per request sent before it at the same moment (its per-request overhead
        is spent only where the step that admits it finds the engine idle: :meth:`step`)."""
        self.running.remove(r)
        self.done.append(r)
        self.reserved -= request_pages(self.shape, r.prompt + r.output)
        if self.pending:
            i = self.pending.popleft()
            self.wave_n = self.wave_n + 1 if self.wave_t == self.t else 0
            self.wave_t = self.t
            going = any(len(x.times) < x.output for x in self.running)
            sent = self.t + (self.cal.output_lag * self.last_step[0] if going else 0.0)
            self.waiting.append(_Req(
                i, self.prompts[i], self.outputs[i], sent,
                sent + (self.wave_n + 1) * self.cal.admission_interval_s))

    def idle_until_arrival(self) -> None:
        """With nothing running and the next request still on its way: the clock jumps to
        its arrival, the time counted idle."""
        if not self.running and self.waiting[0].arrival > self.t:
            self.spent["idle"] += self.waiting[0].arrival - self.t
            self.t = self.waiting[0].arrival

    def took(self, step_s: float) -> None:
        """A step of ``step_s`` seconds runs from ``t`` and the clock moves on; where it
        began as the previous step ended, its length is kept for that end (:meth:`seen`)."""
        if self.keep_next and self.last_step[1] == self.t:
            self.next_step_s[self.t] = step_s
        self.last_step = (step_s, self.t + step_s)
        self.t += step_s

    def charge(self, cost: StepCost, step_s: float) -> None:
        """Count a step of ``step_s`` seconds to the term that bounds it (and a memory-bound
        step's weights, state and KV parts)."""
        bound = cost.bound
        self.spent[bound] += step_s
        if bound == "memory":
            self.parts["weights"] += cost.weights_s
            self.parts["state"] += cost.state_s
            self.parts["kv"] += cost.kv_s

    def decode_run(self) -> int:
        """How many steps from ``t`` only decode the running requests (one token each,
        nothing admitted), ending with the step in which the first of them finishes; 0 when
        the next step is not such a step, or when an arrival could be admitted before then
        (those steps go through :meth:`schedule`, which handles every case)."""
        running, shape = self.running, self.shape
        if not running or len(running) > shape.max_num_batched_tokens:
            return 0
        if any(r.prefilled < r.prompt or not r.times for r in running):
            return 0
        if self.waiting and len(running) < shape.max_num_seqs and self.fits(self.waiting[0]):
            return 0  # an arrival may be admitted at some step: priced one by one
        return min(r.output - len(r.times) for r in running)

    def fast_forward(self, n_steps: int) -> None:
        """The decode fast-forward: ``n_steps`` steps (:meth:`decode_run`) that each give
        every running request one token, priced one by one from the request count and
        their summed context (:func:`step_cost_sum`, the decode-row factor at that count);
        then the requests that reached their output length finish, in running order, as
        the step-by-step path finishes them."""
        running = self.running
        b = len(running)
        ctx = sum(r.prefilled + len(r.times) for r in running)
        price = _decode_pricer(self.cal, b)
        seg: list[float] = []
        for _ in range(n_steps):
            ctx += b
            cost = step_cost_sum(self.shape, self.cal, b, ctx, b, b)
            step_s = price(cost)
            self.took(step_s)
            seg.append(self.t)
            self.charge(cost, step_s)
        self.steps += n_steps
        for r in running:
            r.times.extend(seg)
        for r in [r for r in running if len(r.times) >= r.output]:
            self.finish(r)

    def schedule(self) -> list[tuple[_Req, int]]:
        """One step's batch as vLLM V1 schedules it, (request, new positions) pairs: the
        running requests first (one decode token each, or their next prompt chunk) while
        the token budget lasts, then waiting requests admitted (:meth:`admit`)."""
        budget = self.shape.max_num_batched_tokens
        block = self.shape.mamba_align_block_tokens
        sched: list[tuple[_Req, int]] = []
        for r in self.running:
            if budget <= 0:
                break
            n = (aligned_chunk(r.prompt, r.prefilled, min(r.prompt - r.prefilled, budget), block)
                 if r.prefilled < r.prompt else 1)
            if n == 0:  # no block-aligned chunk fits: skipped this step, as vLLM does
                continue
            sched.append((r, n))
            budget -= n
        self.admit(sched, budget)
        return sched

    def fits(self, r: _Req) -> bool:
        """Whether the KV pool (``shape.kv_pool_pages``) holds ``r`` (:func:`request_pages`)
        beside what the running requests hold; always when no limit is known, or when
        nothing runs (a request larger than the pool is not held back for ever)."""
        pool = self.shape.kv_pool_pages
        return (pool is None or not self.running
                or self.reserved + request_pages(self.shape, r.prompt + r.output) <= pool)

    def admit(self, sched: list[tuple[_Req, int]], budget: int) -> None:
        """Admission of waiting requests: in arrival order, those that have arrived by ``t``
        join the running ones and ``sched`` with their first prompt chunk, while ``budget``
        tokens and free slots (``max_num_seqs``) last; stops at the first whose chunk would
        be empty (block-aligned), as vLLM does."""
        waiting, running = self.waiting, self.running
        block = self.shape.mamba_align_block_tokens
        while (waiting and waiting[0].arrival <= self.t and budget > 0
               and len(running) < self.shape.max_num_seqs and self.fits(waiting[0])):
            n = aligned_chunk(waiting[0].prompt, 0, min(waiting[0].prompt, budget), block)
            if n == 0:
                break
            r = waiting.popleft()
            running.append(r)
            self.reserved += request_pages(self.shape, r.prompt + r.output)
            sched.append((r, n))
            budget -= n

    def advance(self, sched: list[tuple[_Req, int]]) -> None:
        """The step's results at ``t``: prompt chunks computed, a token for each request
        that decoded or finished its prompt; then the requests at their output length
        finish, in the step's order."""
        for r, n in sched:
            if r.prefilled < r.prompt:
                r.prefilled += n
                if r.prefilled == r.prompt:
                    r.times.append(self.t)
            else:
                r.times.append(self.t)
        for r in [r for r, _ in sched if len(r.times) >= r.output]:
            self.finish(r)

    def step(self) -> None:
        """One pass of the scheduler loop: idle until an arrival if nothing runs, then a
        run of decode-only steps fast-forwarded, or one step scheduled, priced and
        advanced. A step that admits a request into an idle engine costs the per-request
        overhead more (once, however many it admits); a step that admits beside running
        requests costs none: on the H100 the 1,000-token 64-stream wave (8 admitting
        chunked steps) ran at the compute term's speed, and by vLLM's own prefill time the
        32-stream wave's second step (31 requests admitted beside the first) lasted its
        compute, not compute plus the overhead (docs/model.md, "The overhead
        spent only by an idle engine", names the runs)."""
        self.idle_until_arrival()
        n_ff = self.decode_run()
        if n_ff:
            self.fast_forward(n_ff)
            return
        idle = not self.running
        sched = self.schedule()
        cost, step_s = _price(self.shape, self.cal, sched)
        if idle and any(r.prefilled == 0 for r, _ in sched):  # admitted into an idle engine
            step_s += self.cal.request_overhead_s
        self.took(step_s)
        self.steps += 1
        self.charge(cost, step_s)
        self.advance(sched)

    def seen(self, r: _Req) -> tuple[float, ...]:
        """``r``'s token times as its client sees them: each token sampled at the end of a
        step that another step followed at once reaches it the calibrated output lag's
        share of that next step later (a step's outputs handed back while the next one
        runs); a token of the last step, or of one before the engine idled, at its end."""
        lag, nxt = self.cal.output_lag, self.next_step_s
        if not lag:
            return tuple(r.times)
        return tuple(t + lag * nxt.get(t, 0.0) for t in r.times)

    def result(self, streams: int) -> Simulation:
        """The finished requests as a timeline (in the order sent) and the time accounts."""
        reqs = []
        for r in sorted(self.done, key=lambda r: r.idx):
            times = self.seen(r)
            reqs.append(RequestTimeline(start_s=r.sent, ttft_s=times[0] - r.sent,
                                        prompt_tokens=r.prompt, token_times_s=times,
                                        chunks=len(times)))
        return Simulation(timeline=Timeline(streams=streams, requests=tuple(reqs)),
                          engine_steps=self.steps, time_s=self.spent,
                          memory_parts_s=self.parts)


def simulate(shape: EngineShape, cal: Calibration, prompts: list[int], outputs: list[int],
             streams: int, cold: bool = False) -> Simulation:
    """Run ``len(prompts)`` requests through the engine at ``streams`` concurrent clients (a
    closed loop): step by step, each scheduled (:meth:`_Loop.schedule`), priced
    (:func:`_price`) and advanced, except runs of decode-only steps, fast-forwarded
    (:meth:`_Loop.fast_forward`). ``cold``: the engine has served nothing yet, so a first
    wave of several prompts arrives ``cal.cold_start_s`` later (one prompt: no later)."""
    if len(prompts) != len(outputs) or not prompts:
        raise ValueError("prompts and outputs must be equally long and not empty")
    if streams < 1:
        raise ValueError(f"streams must be >= 1, got {streams}")
    loop = _Loop(shape, cal, prompts, outputs, deque(range(len(prompts))),
                 keep_next=cal.output_lag > 0)
    loop.send_first_wave(streams, cal.cold_start_s if cold and min(streams, len(prompts)) > 1
                         else 0.0)
    while loop.running or loop.waiting:
        loop.step()
    return loop.result(streams)


def first_token(shape: EngineShape, cal: Calibration, prompts: list[int],
                outputs: list[int], streams: int) -> tuple[float, float]:
    """When the first token of :func:`simulate`'s step is sampled (s from the first send)
    and the length of the step after it where one follows at once (else 0), both with no
    output lag: the simulation stopped there, as nothing later moves them."""
    if len(prompts) != len(outputs) or not prompts:
        raise ValueError("prompts and outputs must be equally long and not empty")
    loop = _Loop(shape, replace(cal, output_lag=0.0), prompts, outputs,
                 deque(range(len(prompts))), keep_next=True)
    loop.send_first_wave(streams)
    first = None
    while (loop.running or loop.waiting) and (first is None or loop.t <= first):
        loop.step()
        if first is None:
            got = [r.times[0] for r in loop.running + loop.done if r.times]
            first = min(got) if got else None
    if first is None:
        raise ValueError("no request sampled a token")
    return first, loop.next_step_s.get(first, 0.0)


def shares(sim: Simulation) -> dict[str, float]:
    """Fractions of simulated busy time by bounding term, and of memory time by part."""
    busy = sim.time_s["memory"] + sim.time_s["compute"]
    mem = sum(sim.memory_parts_s.values())
    out = {f"{k}_bound_share": v / busy for k, v in sim.time_s.items() if k != "idle" and busy}
    out.update({f"{k}_share_of_memory": v / mem for k, v in sim.memory_parts_s.items()
                if mem})
    return out
