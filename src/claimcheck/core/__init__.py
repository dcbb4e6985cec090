"""The arithmetic: units, formats, geometry, weights, cards and ceilings, roofline, claims and
metric definitions. Pure functions; the only I/O is reading the registries' own CSV/JSON/YAML."""
