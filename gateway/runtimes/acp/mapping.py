"""ACP <-> unified: composer_input lowered to content blocks, session updates to runtime events."""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path
from typing import Any
from urllib.parse import quote

from acp import (
    audio_block,
    embedded_blob_resource,
    embedded_text_resource,
    image_block,
    resource_block,
    resource_link_block,
    text_block,
)
from acp.schema import (
    AgentMessageChunk,
    AgentPlanContentUpdate,
    AgentPlanRemovedUpdate,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AvailableCommand,
    BlobResourceContents,
    ContentToolCallContent,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    PlanUpdateItems,
    PlanUpdateMarkdown,
    PromptCapabilities,
    ResourceContentBlock,
    SessionConfigOptionSelect,
    SessionConfigSelectGroup,
    SessionConfigSelectOption,
    SessionModeState,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    Usage,
    UsageUpdate,
)

from contract import Command, FileNode, SlashCommandNode
from contract.models import ComposerNode

from ...attachments import describe, file_name, media_type
from ...events import (
    FileReturned,
    MessageDelta,
    Mode,
    Model,
    PlanEntry,
    PlanUpdated,
    ReasoningDelta,
    RuntimeEvent,
    SessionUpdated,
    ToolEnd,
    ToolRunning,
    ToolStart,
    UsageReported,
)
from ...inbound import Attachment
from ..base import Turn
from ..workspace import inside, target

PromptBlock = Any  # the SDK's content block union (text, image, resource_link, ...)


def command(available: AvailableCommand) -> Command:
    hint = available.input.root.hint if available.input is not None else None
    return Command(name=available.name, description=available.description, hint=hint)


def modes(state: SessionModeState) -> SessionUpdated:
    return SessionUpdated(
        modes=tuple(Mode(m.id, m.name, m.description or "") for m in state.available_modes),
        current_mode=state.current_mode_id,
    )


def config_options(options: list[Any] | None) -> SessionUpdated | None:
    """Session config options (``category`` mode or model, select-typed) as modes and models;
    None when there are none of these.
    """
    modes_: tuple[Mode, ...] | None = None
    models: tuple[Model, ...] | None = None
    current_mode = current_model = None
    for option in options or ():
        if not isinstance(option, SessionConfigOptionSelect):
            continue
        choices = list(_choices(option.options))
        if option.category == "model":
            models = tuple(Model(c.value, c.name, c.description or "") for c in choices)
            current_model = option.current_value
        elif option.category == "mode":
            modes_ = tuple(Mode(c.value, c.name, c.description or "") for c in choices)
            current_mode = option.current_value
    if models is None and modes_ is None:
        return None
    return SessionUpdated(
        modes=modes_, current_mode=current_mode, models=models, current_model=current_model
    )


def _choices(
    options: list[SessionConfigSelectOption] | list[SessionConfigSelectGroup],
) -> Any:
    for option in options:
        if isinstance(option, SessionConfigSelectGroup):
            yield from option.options
        else:
            yield option


def usage(reported: Usage | UsageUpdate) -> UsageReported:
    """A prompt response's token counts, or a ``usage_update`` (context window and cost)."""
    if isinstance(reported, Usage):
        return UsageReported(
            input_tokens=reported.input_tokens,
            output_tokens=reported.output_tokens,
            total_tokens=reported.total_tokens,
            thought_tokens=reported.thought_tokens,
        )
    cost = reported.cost
    return UsageReported(
        context_used=reported.used,
        context_size=reported.size,
        cost=cost.amount if cost else None,
        currency=cost.currency if cost else None,
    )


def prompt_blocks(
    turn: Turn, cwd: Path, capabilities: PromptCapabilities | None
) -> list[PromptBlock]:
    """The turn as ACP content blocks: text, ``file`` nodes as resource links, attachments.
    A ``file`` node whose path leaves the agent's folder ``cwd`` stays text, as typed
    (gateway/runtimes/workspace.py).

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
        if isinstance(node, FileNode) and inside(node.path, cwd):
            flush()
            blocks.append(resource_link_block(node.path, target(node.path, cwd).as_uri()))
        else:
            texts.append(node.raw)
    flush()
    if turn.command is not None and blocks and isinstance(blocks[-1], TextContentBlock):
        blocks[-1] = text_block(blocks[-1].text.rstrip())
    blocks.extend(_attachments(turn, capabilities))
    return blocks or [text_block(payload.source)]


def _attachments(turn: Turn, capabilities: PromptCapabilities | None) -> list[PromptBlock]:
    """Each file as the agent declared it can take it (``promptCapabilities``): image and
    audio blocks, text and PDF as embedded resources; otherwise a link to where the file is
    public, or else its descriptor. Bytes are never dropped silently.
    """
    caps = capabilities or PromptCapabilities()
    blocks: list[PromptBlock] = []
    for item in turn.attachments:
        kind = item.media_type.partition("/")[0]
        data = item.data
        if data is not None and kind == "image" and caps.image:
            blocks.append(image_block(_b64(data), item.media_type, uri=item.url))
        elif data is not None and kind == "audio" and caps.audio:
            blocks.append(audio_block(_b64(data), item.media_type))
        elif data is not None and caps.embedded_context and (embedded := _embedded(item, data)):
            blocks.append(resource_block(embedded))
        elif item.url is not None:
            size = len(data) if data is not None else None
            blocks.append(
                resource_link_block(item.name, item.url, mime_type=item.media_type, size=size)
            )
        else:
            blocks.append(text_block(describe(item)))
    return blocks


_EMBEDDED_BLOBS = {"application/pdf"}  # binary that agents' models read natively


def _embedded(item: Attachment, data: bytes) -> Any:
    """A resource's contents: text when the file is text, a blob for PDF, else None."""
    uri = item.url or f"attachment:{quote(item.name)}"
    if item.media_type in _EMBEDDED_BLOBS:
        return embedded_blob_resource(uri, _b64(data), mime_type=item.media_type)
    if item.media_type.startswith("text/") or item.media_type.endswith(("json", "xml", "yaml")):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        return embedded_text_resource(uri, text, mime_type=item.media_type)
    return None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _returned_file(content: Any) -> FileReturned | None:
    """An image or a file (an embedded blob) in the agent's message: a file for the user."""
    mime: str | None
    uri: str | None
    if isinstance(content, ImageContentBlock):
        data, mime, uri = content.data, content.mime_type, content.uri
    elif isinstance(content, EmbeddedResourceContentBlock) and isinstance(
        content.resource, BlobResourceContents
    ):
        data, mime, uri = content.resource.blob, content.resource.mime_type, content.resource.uri
    else:
        return None
    try:
        decoded = base64.b64decode(data, validate=True)
    except ValueError:
        return None  # not base64: nothing a user could open
    fallback = "image" if isinstance(content, ImageContentBlock) else "file"
    name = file_name(uri.rsplit("/", 1)[-1] if uri else None, fallback)
    kind = media_type(mime, name)
    if "." not in name:  # a name the user's device can open it by
        name += mimetypes.guess_extension(kind) or ""
    return FileReturned(name, kind, decoded)


def turn_events(update: Any) -> list[RuntimeEvent]:
    """The unified events of one in-turn session update (none for what users do not see)."""
    if isinstance(update, AgentMessageChunk):
        content = update.content
        if isinstance(content, TextContentBlock):
            return [MessageDelta(content.text)]
        if isinstance(content, ResourceContentBlock):
            return [MessageDelta(f"[{content.title or content.name}]({content.uri})")]
        returned = _returned_file(content)
        return [] if returned is None else [returned]
    if isinstance(update, ToolCallStart):
        events: list[RuntimeEvent] = [ToolStart(update.tool_call_id, update.title, update.kind)]
        return events + _tool_status(
            update.tool_call_id, update.status, update.title, update.content
        )
    if isinstance(update, ToolCallProgress):
        return _tool_status(update.tool_call_id, update.status, update.title, update.content)
    if isinstance(update, AgentThoughtChunk):
        thought = update.content
        return [ReasoningDelta(thought.text)] if isinstance(thought, TextContentBlock) else []
    if isinstance(update, AgentPlanUpdate):
        return [_plan(update.entries)]
    if isinstance(update, AgentPlanContentUpdate):
        plan = update.plan
        if isinstance(plan, PlanUpdateItems):
            return [_plan(plan.entries)]
        if isinstance(plan, PlanUpdateMarkdown):
            return [PlanUpdated(text=plan.content)]
        return [PlanUpdated(text=f"[plan]({plan.uri})")]
    if isinstance(update, AgentPlanRemovedUpdate):
        return [PlanUpdated()]
    if isinstance(update, UsageUpdate):
        return [usage(update)]
    return []


def _plan(entries: list[Any]) -> PlanUpdated:
    return PlanUpdated(tuple(PlanEntry(e.content, e.status, e.priority) for e in entries))


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
