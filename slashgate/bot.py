"""The public ``Bot``: the embedded runtime's, plus ``run()``, which serves it from a script."""

from __future__ import annotations

import sys

from gateway.runtimes import embedded

from .cli import main


class Bot(embedded.Bot):
    """Your commands, served by the gateway on every channel (see the embedded runtime's
    ``Bot``); ``run()`` serves them from a script.
    """

    def run(self, argv: list[str] | None = None) -> None:
        """``slashgate serve`` with this bot as the runtime: ``python mybot.py --port 9000``."""
        sys.exit(main(["serve", *(sys.argv[1:] if argv is None else argv)], runtime=self))
