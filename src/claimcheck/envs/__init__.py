"""Engines built from their lock files (offline bundles)."""
