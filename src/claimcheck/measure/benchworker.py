"""``vllm bench serve`` for many steps in one process.

Each ``vllm bench serve`` call spends about 22 s importing vLLM and torch before it sends a
request (measured on the H200, data/raw/runs: step wall time minus bench ``duration``). A
protocol of 15 steps would spend 5.5 minutes of GPU time on imports. This worker imports
vLLM's benchmark once and runs each step through the very function the CLI calls
(``vllm bench serve`` -> ``vllm.benchmarks.serve.main(args)``), with the step's arguments
parsed by vLLM's own parser (``add_cli_args``), its output sent to the step's log.

Protocol, one JSON object per line: the runner writes ``{"argv": [...], "log": PATH}`` (the
arguments after ``bench serve``) and reads back ``{"rc": 0}`` or ``{"rc": 1, "error": ...}``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback


@contextlib.contextmanager
def _fd_redirect(path: str):
    """Send file descriptors 1 and 2 (Python and C output alike) to ``path``."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for f in (fd, *saved):
            os.close(f)


def serve() -> int:
    """Answer step requests on stdin until it closes."""
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    from vllm.benchmarks.serve import add_cli_args, main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    reply.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        out: dict[str, object] = {"rc": 0}
        with _fd_redirect(req["log"]):
            try:
                parser = FlexibleArgumentParser(prog="vllm bench serve")
                add_cli_args(parser)
                args = parser.parse_args(req["argv"])
                print(args, flush=True)
                main(args)
            except SystemExit as e:
                out = {"rc": e.code if isinstance(e.code, int) else 1, "error": str(e)}
            except BaseException as e:  # noqa: BLE001 - reported to the runner, which records it
                traceback.print_exc()
                out = {"rc": 1, "error": f"{type(e).__name__}: {e}"}
        reply.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(serve())
