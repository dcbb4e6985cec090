"""The arithmetic: units, formats, geometry, weights, cards and ceilings, roofline, claims and
metric definitions, and what a run's files hold, parsed. Pure functions: no module here opens
a file (the readers are :mod:`claimcheck.loaders` and :mod:`claimcheck.runio`)."""
