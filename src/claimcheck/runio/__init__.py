"""The files of runs and of the pipeline, read and written: a run directory (provenance,
steps, each step's bench result kept compact and checked against the runs folder's manifest,
server logs, telemetry.csv) and the derived tables with their dtypes. Imports core (the
parsing and the arithmetic); core never imports this package."""
