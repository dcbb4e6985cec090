"""Snakemake script: the Update body's three figures of one card's runs (PNG + SVG each):
decode against each weight format's bandwidth line, what long prompts cost, and decode
against context."""
from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    from claimcheck.pipeline.figures import card_figures

    i, o, p = snakemake.input, snakemake.output, snakemake.params  # noqa: F821
    for path in card_figures(list(i.records), p.card, i.model, i.cards, i.ceilings,
                             p.model_name, o.decode_png.removesuffix(".png"),
                             o.long_png.removesuffix(".png"),
                             o.context_png.removesuffix(".png"),
                             snakemake.config.get("user_cards") or None):  # noqa: F821
        log.write(path + "\n")
