"""The project's input files read, every error naming the file: text, JSON and CSV
(:mod:`~claimcheck.loaders.files`), the JSON schemas shipped in the package, and the config
and registry loaders (cards and ceilings, model configs, the claims and weights registries,
the seed articles, protocols and engines YAML). Each loader reads its file and hands the text
or rows to core's parser; imports core only, and core never imports this package."""
