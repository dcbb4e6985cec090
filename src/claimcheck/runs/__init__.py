"""A run directory: its files, record and checks, read once into the Run and its step table."""
