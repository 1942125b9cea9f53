"""ACP <-> unified: composer_input lowered to content blocks, session updates to runtime events."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from acp import image_block, resource_link_block, text_block
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AvailableCommand,
    ContentToolCallContent,
    PromptCapabilities,
    ResourceContentBlock,
    SessionModeState,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
)

from contract import Command, FileNode, SlashCommandNode
from contract.models import ComposerNode

from ...events import (
    MessageDelta,
    Mode,
    RuntimeEvent,
    SessionUpdated,
    StatusChanged,
    ToolEnd,
    ToolRunning,
    ToolStart,
)
from ..base import Turn

PromptBlock = Any  # the SDK's content block union (text, image, resource_link, ...)


def command(available: AvailableCommand) -> Command:
    hint = available.input.root.hint if available.input is not None else None
    return Command(name=available.name, description=available.description, hint=hint)


def modes(state: SessionModeState) -> SessionUpdated:
    return SessionUpdated(
        modes=tuple(Mode(m.id, m.name, m.description or "") for m in state.available_modes),
        current_mode=state.current_mode_id,
    )


def prompt_blocks(
    turn: Turn, cwd: Path, capabilities: PromptCapabilities | None
) -> list[PromptBlock]:
    """The turn as ACP content blocks: text, ``file`` nodes as resource links, attachments.

    A supported command goes first as ``/<canonical name> <args>``, whatever the user typed.
    """
    payload = turn.message.payload
    nodes: list[ComposerNode] = list(payload.nodes or ())
    texts: list[str] = []
    blocks: list[PromptBlock] = []
    head: str | None = None  # the command, ahead of the first text (its leading spaces dropped)
    if turn.command is not None:
        start = next((i for i, n in enumerate(nodes) if isinstance(n, SlashCommandNode)), None)
        nodes = nodes[start + 1 :] if start is not None else []
        head = f"/{turn.command} "
    elif not nodes:
        texts.append(payload.source)

    def flush() -> None:
        nonlocal head
        text = "".join(texts)
        texts.clear()
        if head is not None:
            text, head = head + text.lstrip(), None
        if text.strip():
            blocks.append(text_block(text))

    for node in nodes:
        if isinstance(node, FileNode):
            flush()
            blocks.append(resource_link_block(node.path, _file_uri(node.path, cwd)))
        else:
            texts.append(node.raw)
    flush()
    if turn.command is not None and blocks and isinstance(blocks[-1], TextContentBlock):
        blocks[-1] = text_block(blocks[-1].text.rstrip())
    blocks.extend(_attachments(turn, capabilities))
    return blocks or [text_block(payload.source)]


def _file_uri(path: str, cwd: Path) -> str:
    target = Path(path).expanduser()
    return (target if target.is_absolute() else cwd / target).resolve().as_uri()


def _attachments(turn: Turn, capabilities: PromptCapabilities | None) -> list[PromptBlock]:
    images = bool(capabilities and capabilities.image)
    blocks: list[PromptBlock] = []
    for item in turn.attachments:
        if item.data is not None and images and item.media_type.startswith("image/"):
            blocks.append(image_block(base64.b64encode(item.data).decode("ascii"), item.media_type))
        elif item.url is not None:
            blocks.append(resource_link_block(item.name, item.url, mime_type=item.media_type))
    return blocks


def turn_events(update: Any) -> list[RuntimeEvent]:
    """The unified events of one in-turn session update (none for what users do not see)."""
    if isinstance(update, AgentMessageChunk):
        content = update.content
        if isinstance(content, TextContentBlock):
            return [MessageDelta(content.text)]
        if isinstance(content, ResourceContentBlock):
            return [MessageDelta(f"[{content.title or content.name}]({content.uri})")]
        return []
    if isinstance(update, ToolCallStart):
        events: list[RuntimeEvent] = [ToolStart(update.tool_call_id, update.title, update.kind)]
        return events + _tool_status(
            update.tool_call_id, update.status, update.title, update.content
        )
    if isinstance(update, ToolCallProgress):
        return _tool_status(update.tool_call_id, update.status, update.title, update.content)
    if isinstance(update, AgentPlanUpdate):
        marks = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}
        plan = "; ".join(f"{marks.get(e.status, '[ ]')} {e.content}" for e in update.entries)
        return [StatusChanged("generating", f"plan: {plan}" if plan else None)]
    return []


def _tool_status(
    tool_id: str, status: str | None, title: str | None, content: list[Any] | None
) -> list[RuntimeEvent]:
    if status == "in_progress":
        return [ToolRunning(tool_id, title)]
    if status in ("completed", "failed"):
        output = "".join(
            c.content.text
            for c in content or ()
            if isinstance(c, ContentToolCallContent) and isinstance(c.content, TextContentBlock)
        )
        return [
            ToolEnd(tool_id, "completed" if status == "completed" else "failed", output or None)
        ]
    return []
