"""Whether a message is for the bot, read from a pill at the start of its formatted text:
a pill with a query (``?via=``) counts, one to someone else does not, and a crafted link
that never closes is read in one pass (anyone in a room the bot is in can send one, and
the event loop serves every channel).
"""

from __future__ import annotations

import resource
import subprocess
import sys

from channels.matrix.addressing import Addressing
from tests.http import ROOT

BOT = "@gw_bot:example.org"
ADDRESSING = Addressing(BOT)


def html(formatted: str) -> dict[str, str]:
    return {"format": "org.matrix.custom.html", "formatted_body": formatted, "body": "x"}


def test_a_pill_at_the_start_addresses_its_user() -> None:
    pill = '<a href="https://matrix.to/#/@gw_bot:example.org?via=example.org">Gateway</a>: /echo hi'
    assert ADDRESSING.addressed(html(pill), "Gateway: /echo hi", None)
    assert ADDRESSING.strip_mention(html(pill), "Gateway: /echo hi", None) == "/echo hi"
    other = '<a href="https://matrix.to/#/@bob:example.org">Bob</a>: /echo hi'
    assert not ADDRESSING.addressed(html(other), "Bob: /echo hi", None)


def test_an_unclosed_link_is_read_in_one_pass() -> None:
    # Quadratic in the link's length before: about 15 s of CPU at 300,000 characters, on the
    # event loop. Read here in a process of its own that may use 5 s of CPU (a hang guard,
    # as the loop watchdog is for the suite's tests; the regular expression holds the GIL,
    # which keeps the watchdog's thread out).
    code = (
        "from channels.matrix.addressing import Addressing\n"
        "body = '<a href=\"https://matrix.to/#/' + 'a' * 300_000\n"
        "content = {'format': 'org.matrix.custom.html', 'formatted_body': body}\n"
        f"assert not Addressing({BOT!r}).addressed(content, 'hi', None)\n"
    )

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (5, 5))

    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, preexec_fn=limited, capture_output=True
    )
    assert done.returncode == 0, done.stderr.decode()[-500:] or f"ended by signal {done.returncode}"
