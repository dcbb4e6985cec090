"""What a step recorded, parsed: token timeline, tok/s definitions, energy, logs, telemetry."""
