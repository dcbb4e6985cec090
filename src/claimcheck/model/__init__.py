"""The step model's arithmetic: a step priced, simulated, drafting, carried to another card."""
