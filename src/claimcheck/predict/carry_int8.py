"""The rate of an engine with int8 activations on its MLP GEMMs carried to another
card (:func:`int8_term`), and its short words (:func:`int8_words`). Arithmetic and words
only: the run it reads is found by :func:`claimcheck.predict.carry.int8_prefill`."""

from __future__ import annotations

from typing import Any

from claimcheck.model import carry as cc


def int8_term(target: str, i8_engine: str, scheme: str, source_run: str, flops_s: float,
              clock: tuple[float | None, int], geom: Any, src: Any, new: Any,
              rest_local_flops_s: float, rest_new_flops_s: float, ratio: float,
              rest_engine: str) -> dict[str, Any]:
    """The local int8 run's held-prefill rate ``flops_s`` (measured at ``clock``: median SM
    MHz and samples) moved to the rated clock; the MLP's rate solved from it with the rest
    at the 16-bit path's ``rest_local_flops_s`` (at the rated clock; assumed) and the MLP's
    share of the body FLOPs from ``geom`` (:func:`claimcheck.model.carry.int8_mlp_rate`);
    as a share of the local dense int8 rate, carried by ``new``'s dense int8 rate and the
    power clock ratio, and joined with ``new``'s 16-bit rate ``rest_new_flops_s``
    (:func:`claimcheck.model.carry.split_rate`): the rate of every position, prompt or
    decode. Returns the term, that rate, the engine."""
    f = geom.mlp_weights_per_token / geom.body_weights_per_token
    dense8 = src.tflops("int8") * 1e12
    clk, n_clk = clock
    body_at, clock_words = cc.share_at_rated_clock(cc.share(flops_s, dense8, "int8_body"),
                                                   clk, src.tensor_clock_mhz)
    mlp_local = cc.int8_mlp_rate(body_at * dense8, rest_local_flops_s, f)
    s8 = cc.share(mlp_local, dense8, "int8_mlp")
    mlp_new = cc.carried_rate(s8, new.tflops("int8") * 1e12, ratio)
    prefill = cc.split_rate(f, mlp_new, rest_new_flops_s)
    clocked = (f" at a median SM clock of {clk:,.0f} MHz ({n_clk} samples), "
               f"{body_at * dense8 / 1e12:,.0f} TFLOP/s at its rated clock" if clk
               else f" ({clock_words})")
    rule = (f"prefill with int8 activations on the MLP GEMMs ({target}): engine "
            f"{i8_engine} on {src.card} (its start log: {scheme}) prefilled at "
            f"{flops_s / 1e12:,.0f} TFLOP/s{clocked}; with the MLP {f:.3f} of the "
            f"body's FLOPs and the rest at the 16-bit path's "
            f"{rest_local_flops_s / 1e12:,.0f} TFLOP/s ({rest_engine}, at the rated clock; "
            f"assumed for the rest), the MLP ran at {mlp_local / 1e12:,.0f} TOP/s, "
            f"{s8:.3f} of {src.card}'s dense int8 {src.tflops('int8'):g}; on {new.card}: "
            f"{s8:.3f} x dense int8 {new.tflops('int8'):g} TOP/s x the power clock ratio = "
            f"{mlp_new / 1e12:,.1f} TOP/s on the MLP and {rest_new_flops_s / 1e12:,.1f} "
            f"TFLOP/s on the rest: every position, prompt or decode, at {prefill / 1e12:,.1f} "
            "TFLOP/s (vLLM applies a layer's quantization method on every forward pass, and "
            "seed 001 reports a higher 64-stream batch figure with every layer int8 than "
            "with the MLPs alone)")
    term = cc.Term("int8_mlp_share", s8, "share of dense int8 at its rated clock", "carried",
                   (source_run,), rule)
    return {"term": term, "prefill_flops_s": prefill, "engine": i8_engine}


INT8_WORDS = "int8 activations on the MLPs: "
"""How :func:`int8_words` starts: the Update finds the phrase among a verdict's carried
assumptions by it (:func:`claimcheck.update.carry_words.ladder_values`)."""


def int8_words(t: dict[str, Any]) -> str:
    """The int8 prompt term in short words, from
    :func:`claimcheck.predict.carry.carried_terms`' output."""
    i8 = t["int8_prefill"]
    return (f"{INT8_WORDS}every position, prompt or decode, runs at "
            f"{i8['prefill_flops_s'] / 1e12:,.1f} TFLOP/s (the MLP's share of the "
            f"dense int8 rate carried from {i8['engine']}'s run on the "
            f"{t['local_card'].upper()})")
