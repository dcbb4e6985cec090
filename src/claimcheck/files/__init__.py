"""The project's files: where they live, read naming the source; tables, Markdown, bench.cols."""
