"""What the command line says to someone starting it: a port in use in their words, and a
``--help`` that is enough on its own (a pip install has no README).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from slashgate.cli import main
from tests.http import ROOT, STARTUP


def test_a_port_in_use_names_the_port_and_how_to_choose_another() -> None:
    with socket.socket() as held:  # what already serves on the port
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLASHGATE_")}
        served = subprocess.run(
            [sys.executable, "-m", "slashgate", "serve", "--port", str(port)],
            cwd=ROOT, env={**env, "SLASHGATE_STORE": "memory"},
            capture_output=True, text=True, timeout=STARTUP,
        )  # fmt: skip
    assert served.returncode == 1, served.stderr
    assert served.stderr.splitlines()[-1] == (
        f"slashgate: cannot start: cannot listen on 127.0.0.1 port {port}: the port is in use "
        "(another slashgate, or another server): stop what uses it, or choose another port: "
        f"slashgate serve --port {port + 1} (SLASHGATE_PORT; 0 picks a free one)"
    )
    assert "Errno" not in served.stderr and "OSError" not in served.stderr
    assert "listening" not in served.stdout


def test_help_is_enough_on_its_own_and_names_the_web_chat(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    said = capsys.readouterr().out
    assert "README" not in said
    assert "http://127.0.0.1:8080/chat" in said and "web chat" in said
    assert "SLASHGATE_CONFIG" in said and "slashgate check" in said
    assert "2 bad configuration" in said
