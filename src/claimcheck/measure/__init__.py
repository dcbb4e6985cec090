"""The measuring side: the vLLM server, load clients, NVML telemetry and the runner."""
