"""The measuring side: protocols, engines, the vLLM server, load clients, server-log parser,
NVML telemetry, provenance and the runner that writes a run directory."""
