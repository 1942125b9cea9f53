"""A reply's Markdown as Matrix message content: the Markdown itself as ``body`` (what clients
without HTML show, and what Matrix bots conventionally send), and ``formatted_body`` in the
HTML subset the spec allows (``org.matrix.custom.html``). The core's dialect renders to
paragraphs, emphasis, code, links, lists, quotes, headings, rules and tables: all in the
subset, and raw HTML in a reply is escaped, never passed on.

A long reply is cut into several messages below Synapse's limit on an event (65,536 bytes of
JSON, the content's two texts and the event's own fields together).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from markdown_it.common.utils import escapeHtml

from channels.markdown import dialect
from channels.text import chunks

MAX_EVENT = 65_536  # bytes: the spec's limit on a whole event as JSON
ROOM_FOR_FIELDS = 4_096  # bytes kept for what the server adds (ids, signatures, relations)
LIMIT = 16_000  # UTF-16 units of Markdown in one message, before the size check


@dataclass(frozen=True, slots=True)
class Chunk:
    """One message's text: ``body`` (Markdown) and ``html``."""

    body: str
    html: str

    def content(self, msgtype: str = "m.notice") -> dict[str, Any]:
        return {
            "msgtype": msgtype,
            "body": self.body,
            "format": "org.matrix.custom.html",
            "formatted_body": self.html,
        }

    @property
    def size(self) -> int:
        """Bytes of its content as JSON (what counts against the event limit)."""
        return len(json.dumps(self.content(), ensure_ascii=False).encode())


# A line break is a line break: agents write lines for chat, where Telegram, Slack and Discord
# keep them.
HTML = dialect(breaks=True)
_IMAGE = HTML.renderer.rules["image"]  # type: ignore[attr-defined]  # RendererHTML's


def _image(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    """An image of the homeserver's (``mxc://``) as an image; any other as a link to it: the
    spec's HTML allows ``img`` of ``mxc`` sources only, and clients show nothing for others.
    """
    token = tokens[idx]
    source = str(token.attrGet("src") or "")
    if source.startswith("mxc://"):
        return str(_IMAGE(tokens, idx, options, env))
    label = renderer.renderInlineAsText(token.children or [], options, env) or source
    return f'<a href="{escapeHtml(source)}">{escapeHtml(label)}</a>'


HTML.add_render_rule("image", _image)


# Words of letters and digits, single spaces between them: nothing Markdown or HTML reads
# as more than text, so one paragraph of itself (most short replies, without the parser's
# 20 us; tests/matrix/test_render.py holds it to the parser's output).
PLAIN = re.compile(r"[^\W_]+(?: [^\W_]+)*")


def html(markdown: str) -> str:
    if PLAIN.fullmatch(markdown):
        return f"<p>{markdown}</p>"
    return HTML.render(markdown).rstrip("\n")


def render(markdown: str, limit: int = LIMIT) -> list[Chunk]:
    """The messages of a reply, in order: each fits in an event (a piece whose HTML came out
    too long, as a text of ``&`` does, is cut again at half the room).
    """
    out: list[Chunk] = []
    for piece in chunks(markdown, limit):
        chunk = Chunk(piece, html(piece))
        # An edit carries its text twice (the fallback and m.new_content).
        if 2 * chunk.size > MAX_EVENT - ROOM_FOR_FIELDS and limit // 2 >= 64:
            out.extend(render(piece, limit // 2))
        else:
            out.append(chunk)
    return out


def preview(markdown: str) -> Chunk | None:
    """A streamed reply as far as it came: its first message's worth, with an ellipsis.
    Only the first message is rendered (it is cut within the text's first ``LIMIT``
    characters): a long reply is previewed at every edit, on the event loop.
    """
    if not markdown.strip():
        return None
    first = render(markdown[: LIMIT + 1])[0]
    return first if first.body == markdown else render(first.body + " …")[0]
