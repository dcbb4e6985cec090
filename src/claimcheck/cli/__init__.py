"""Command-line interface: claimcheck geometry|roofline|claims|serve|wait|stop|measure|
metrics|model|predict.

One module per command group: :mod:`.physics` (geometry, roofline), :mod:`.claims`,
:mod:`.runs` (serve, wait, stop, measure), :mod:`.model` (metrics, model, predict). Here: the
parser, which runs each command's ``cmd_<name>`` from this package, and :func:`main`, which
turns bad input and write errors into one line and an exit status.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from typing import Any

from claimcheck.cli import claims, model, physics, runs
from claimcheck.cli.claims import cmd_claims
from claimcheck.cli.common import check_name_options
from claimcheck.cli.model import cmd_metrics, cmd_model, cmd_predict
from claimcheck.cli.physics import _non_finite, cmd_geometry, cmd_roofline
from claimcheck.cli.runs import cmd_measure, cmd_serve, cmd_stop, cmd_wait, measure_card
from claimcheck.files.errors import InputError

__all__ = ["_non_finite", "cmd_claims", "cmd_geometry", "cmd_measure", "cmd_metrics",
           "cmd_model", "cmd_predict", "cmd_roofline", "cmd_serve", "cmd_stop", "cmd_wait",
           "main", "measure_card", "parser"]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="claimcheck", description="Check LLM-serving throughput claims: model "
        "geometry, the batching roofline, the claims registry, replaying protocols on a GPU, "
        "and what a run's token timeline gives. Bad input exits 2 with one line naming the "
        "file, line or option.")
    sub = p.add_subparsers(dest="cmd", required=True)

    physics.add_parsers(sub)
    claims.add_parser(sub)
    runs.add_parsers(sub)
    model.add_parsers(sub)
    here = globals()  # each command runs the cmd_<name> this package holds
    for action in sub._choices_actions:  # each command's --help opens with its one line
        cmd = sub.choices[action.dest]
        cmd.set_defaults(func=here["cmd_" + action.dest])
        cmd.description = cmd.description or action.help
    for name in physics.CARDS_FILE_COMMANDS:  # a card of one's own (README)
        physics.add_cards_file(sub.choices[name])
    return p


WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush cannot fail again."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


class _NamedStdout:
    """stdout whose write errors say they were writing standard output (a full disk or
    a closed pipe otherwise raises an OSError that names no file)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def _call(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except OSError as e:
            if e.filename is None:
                e.filename = "standard output"
            raise

    def write(self, text: str) -> int:
        return self._call(self._inner.write, text)

    def flush(self) -> None:
        self._call(self._inner.flush)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def main(argv: list[str] | None = None) -> int:
    """Run one command. Exit 2 with one line for bad input (:class:`InputError` only);
    a closed stdout (``| head``) ends quietly with 0; a full or read-only disk gives one
    line naming the path and exit 1; any other exception shows its traceback."""
    a = parser().parse_args(argv)
    real_stdout = sys.stdout
    sys.stdout = _NamedStdout(real_stdout)  # type: ignore[assignment]
    try:
        check_name_options(a)  # a name that would name a folder, before anything is read
        physics.use_cards_file(a)  # validated; each card read of the command is given it
        rc = a.func(a)
        sys.stdout.flush()
        return rc
    except InputError as e:
        print(f"claimcheck: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except OSError as e:
        if e.errno not in WRITE_ERRNOS:
            raise
        where = e.filename if e.filename is not None else "a file (the system did not say which)"
        print(f"claimcheck: error: cannot write {where}: {e.strerror}", file=sys.stderr)
        _silence_stdout()
        return 1
    finally:
        sys.stdout = real_stdout

