"""The claims registry: claims, their metrics and words, the seeds' quotes, their rooflines."""
