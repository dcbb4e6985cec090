"""Snakemake script: the speculation figure (PNG + SVG)."""
import pandas as pd

from claimcheck.figures import figstyle
from claimcheck.figures.spec_fig import speculation_figure

i = snakemake.input  # noqa: F821
fig = speculation_figure(pd.read_csv(i.verdicts), pd.read_csv(i.speculation))
paths = figstyle.save(fig, str(snakemake.output.png).removesuffix(".png"))  # noqa: F821
with open(snakemake.log[0], "w") as f:  # noqa: F821
    f.write("".join(f"{p}\n" for p in paths))
