"""A verdict for every registry claim: its numbers, reason and evidence, and its Markdown."""
