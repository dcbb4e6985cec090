"""The step model calibrated on measured runs: which steps, by one stated rule; the fit."""
