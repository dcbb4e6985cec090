"""Short text both halves of the Update print (the body, :mod:`claimcheck.update.update_body`,
and the appendix, :mod:`claimcheck.update.update`): counts with their noun, data text with
identifiers set as code, the dummy-weights note.
"""

from __future__ import annotations

import re

from claimcheck.physics.geometry import Geometry
from claimcheck.runs.run import Run


def plural(n: float, word: str) -> str:
    """'1 stream', '8 streams' (a count and its noun, agreeing)."""
    return f"{n:,.0f} {word}" if n == 1 else f"{n:,.0f} {word}s"


CODE_WORD = re.compile(r"(?<![`\w])([\w./-]*[A-Za-z0-9]_[\w./-]*\w)(?![`\w])")


def plain_words(text: str) -> str:
    """Data text (a protocol's description) for prose: identifiers with underscores set
    as code, so prose never reads a snake_case name as a word."""
    return CODE_WORD.sub(r"`\1`", text)


def dummy_note(runs: list[Run], model: str | None, geometry: Geometry | None) -> list[str]:
    """The dummy-weights note (a quote block and a blank line), or nothing when no run
    used dummy weights (each run's provenance says)."""
    if not any(r.dummy for r in runs):
        return []
    return ["> **Dummy weights.** These runs serve the real "
            f"{model or 'model'} geometry (`config.json`"
            + (f", {geometry.num_layers} layers, {geometry.total_params / 1e9:.2f} B "
               "parameters" if geometry is not None else "")
            + ") with random weights "
            "(`--load-format dummy`) and a synthetic tokenizer, because no checkpoint "
            "could be downloaded on the GPU host. Speed depends on the geometry, the "
            "dtypes and the engine, not on the weights' values, but these are not runs "
            "of the published checkpoints.", ""]
