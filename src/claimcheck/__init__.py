"""claimcheck: make LLM-serving throughput claims checkable.

Submodules each do one job: ``geometry`` (model config -> parameter and cache counts),
``formats`` (bytes per value for weights, KV cache and recurrent state), ``cards``
(card registry), ``roofline`` (the article's batching roofline), ``claims`` (claims
registry), and the measuring side (``protocols``, ``engines``, ``bench``, ``serverlog``,
``telemetry``, ``provenance``, ``runner``).
"""

__version__ = "0.1.0"
