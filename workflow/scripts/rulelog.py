"""Shared by the rule scripts: what a script prints or warns, and the traceback when it
fails, go to its rule's ``log:`` file; a failure's last line also goes to the terminal."""

from __future__ import annotations

import contextlib
import logging
import sys
import traceback
import warnings
from collections.abc import Iterator
from typing import IO, Any


@contextlib.contextmanager
def rule_log(smk: Any) -> Iterator[IO[str]]:
    """``with rule_log(snakemake) as log:`` around the script's work (its imports too):
    stdout, stderr, warnings and logging go to ``snakemake.log[0]``; an exception is
    written there with its traceback and named in one line on the terminal, and the script
    exits 1 (the job fails)."""
    terminal = sys.stderr
    with open(smk.log[0], "w") as log, contextlib.redirect_stdout(log), \
            contextlib.redirect_stderr(log):
        logging.basicConfig(stream=log, level=logging.INFO, force=True)
        logging.captureWarnings(True)
        warnings.simplefilter("default")
        try:
            yield log
        except Exception as e:
            traceback.print_exc(file=log)
            print(f"{smk.rule}: {type(e).__name__}: {e} (traceback in {smk.log[0]})",
                  file=terminal)
            raise SystemExit(1) from None
        finally:
            logging.captureWarnings(False)
