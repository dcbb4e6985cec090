"""The files of runs and of the pipeline, read and written: a run directory (provenance,
steps, each step's bench result kept compact and checked against the runs folder's manifest,
server logs, telemetry.csv) read once into the one run type (:class:`claimcheck.runio.run.
Run`), and the derived tables with their dtypes. Imports core (the parsing and the
arithmetic) and the loaders (the text, JSON and config readers); core never imports this
package."""
