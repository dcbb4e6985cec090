"""The reporting side: run records, derived tables, the Update section, plots and figure style."""
