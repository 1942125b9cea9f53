"""An ``@file:`` reference that leaves the agent's folder reaches an Electric agent as a text
node, what was typed; one that stays is its file node (tests/test_references.py: all runtimes).
"""

from __future__ import annotations

from contract import composer_input_problems

from .conftest import say
from .fake_server import FakeElectric


async def test_a_file_node_that_leaves_the_folder_is_sent_as_text(
    fake: FakeElectric, electric_gateway
):
    text = "see @file:../../etc/passwd @file:~/.ssh/id_rsa @file:/etc/shadow and @file:src/a.py"
    async with electric_gateway() as server:
        await say(server, text)

    (send,) = fake.sends()
    payload = send.body["payload"]
    assert composer_input_problems(payload) == []
    files = [n["raw"] for n in payload["nodes"] if n["kind"] == "file"]
    assert files == ["@file:src/a.py"]
    texts = "".join(n["raw"] for n in payload["nodes"] if n["kind"] == "text")
    assert "@file:../../etc/passwd @file:~/.ssh/id_rsa @file:/etc/shadow" in texts
