"""The measuring side: the vLLM server and how it is called, load clients, NVML telemetry,
provenance and the runner that writes a run directory (protocols, engines and the server-log
parser are data and parsing, in :mod:`claimcheck.core`; run files, :mod:`claimcheck.runio`)."""
