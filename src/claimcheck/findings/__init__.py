"""What the runs found: the derived step frame, each finding from it, and their tables."""
