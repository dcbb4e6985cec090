"""What the workflow and notebooks call: derived data, run products, figures, documents."""
