"""Snakemake script: the verdict figure (PNG + SVG) from the verdicts table."""
from claimcheck.figures import figstyle
from claimcheck.pipeline import figures

fig = figures.verdict_figure(snakemake.input.verdicts)  # noqa: F821
# PNG and SVG share their base name: the PNG output less its suffix
paths = figstyle.save(fig, str(snakemake.output.png).removesuffix(".png"))  # noqa: F821
with open(snakemake.log[0], "w") as f:  # noqa: F821
    f.write("".join(f"{p}\n" for p in paths))
