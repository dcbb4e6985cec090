"""One error type for bad input: it names the file, line, key and what is wrong."""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input, reported before any work starts.

    The message reads ``FILE:LINE: KEY: REASON`` (line and key when known).
    """

    def __init__(self, source: str, reason: str, *, line: int | None = None,
                 key: str | None = None) -> None:
        self.source = str(source)
        self.line = line
        self.key = key
        self.reason = reason
        where = self.source + (f":{line}" if line is not None else "")
        what = f"{key}: " if key else ""
        super().__init__(f"{where}: {what}{reason}")
