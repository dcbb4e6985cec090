"""A notebook executed with papermill without the kernel's harmless noise (the workflow's
notebook rules): ``python3 -m claimcheck.pipeline.nbrun NB OUT -f PARAMS.yaml [--log-output]``
does what ``papermill -k python3 NB OUT -f PARAMS.yaml`` does.

Two lines every papermill run printed, neither about the notebook (issue 40):

- ``[IPKernelApp] WARNING | Kernel is running over TCP without encryption...``: ipykernel
  7.4 warns at start-up that the kernel's sockets, on 127.0.0.1, are not encrypted. The
  kernel only ever talks to this process on loopback; its start-up warnings are left out
  (``--IPKernelApp.log_level=ERROR``; its errors still print).
- ``ERROR | KeyboardInterrupt caught in kernel`` after a run that succeeded: jupyter_client
  8 sends the kernel SIGINT before asking it to shut down; a kernel still handling a message
  (the last cell's reply or status) logs the interrupt as an error. After papermill's last
  cell there is nothing to interrupt, so :class:`QuietKernelManager` skips that signal while
  it shuts down; an interrupt at any other time (a cell timing out) is sent as before.
"""

from __future__ import annotations

import argparse
import sys

from jupyter_client.manager import AsyncKernelManager

KERNEL_ARGS = ["--IPKernelApp.log_level=ERROR"]


class QuietKernelManager(AsyncKernelManager):
    """jupyter_client's kernel manager, less the interrupt it sends on its way to shut down."""

    async def _async_interrupt_kernel(self) -> None:
        if self.shutting_down:
            return
        await super()._async_interrupt_kernel()


def execute(notebook: str, output: str, parameters: dict, log_output: bool = False) -> None:
    """``notebook`` run by kernel ``python3`` with ``parameters`` into ``output``."""
    import papermill

    papermill.execute_notebook(notebook, output, parameters=parameters, kernel_name="python3",
                               log_output=log_output, extra_arguments=KERNEL_ARGS,
                               kernel_manager_class=QuietKernelManager)


def main(argv: list[str] | None = None) -> int:
    import logging

    import yaml

    logging.basicConfig(level=logging.INFO, format="%(message)s")  # as papermill's CLI

    p = argparse.ArgumentParser(prog="python3 -m claimcheck.pipeline.nbrun",
                                description="papermill -k python3, without the kernel's "
                                            "start-up warning and shutdown interrupt")
    p.add_argument("notebook")
    p.add_argument("output")
    p.add_argument("-f", "--parameters-file", help="a YAML file of parameters")
    p.add_argument("--log-output", action="store_true", help="print the cells' output")
    a = p.parse_args(argv)
    params = {}
    if a.parameters_file:
        with open(a.parameters_file, encoding="utf-8") as f:
            params = yaml.safe_load(f) or {}
        if not isinstance(params, dict):
            print(f"{a.parameters_file}: not a YAML mapping of parameters", file=sys.stderr)
            return 2
    execute(a.notebook, a.output, params, a.log_output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
