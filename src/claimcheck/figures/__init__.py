"""Every figure, drawn in the project's one figure style."""
