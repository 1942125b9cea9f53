"""Wire models of the contract: commands and the composer_input message."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import compress, repeat
from operator import eq
from typing import Annotated, Any, Literal, overload

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    TypeAdapter,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

from . import pieces
from .pieces import Columns, Row

CommandSource = Literal["static", "dynamic", "runtime", "gateway"]


class CommandArgument(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    type: Literal["string", "number", "boolean"] = "string"
    required: bool = False
    description: str | None = None


class Command(BaseModel):
    """One entry of a command inventory (RFC SlashCommandDefinition + ACP input.hint)."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    hint: str | None = None
    arguments: tuple[CommandArgument, ...] | None = None
    source: CommandSource = "runtime"


class _Node(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: str  # narrowed by each node type; declared here so that it serializes first
    start: int
    end: int
    raw: str


class TextNode(_Node):
    kind: Literal["text"] = "text"


class SlashCommandNode(_Node):
    kind: Literal["slash_command"] = "slash_command"
    name: str


class FileNode(_Node):
    kind: Literal["file"] = "file"
    path: str


class SymbolNode(_Node):
    kind: Literal["symbol"] = "symbol"
    name: str


class BranchNode(_Node):
    kind: Literal["branch"] = "branch"
    name: str


ComposerNode = Annotated[
    TextNode | SlashCommandNode | FileNode | SymbolNode | BranchNode,
    Field(discriminator="kind"),
]


SLASH = "slash_command"
_NODE_MODELS: TypeAdapter[tuple[ComposerNode, ...]] = TypeAdapter(tuple[ComposerNode, ...])


class Nodes(Sequence[ComposerNode]):
    """``payload.nodes``: an immutable sequence of node models, kept as plain rows or columns
    and made into models on first use. A message of 1 MiB can hold tens of thousands of
    nodes; the gateway only dumps and checks them, which goes straight from the plain data:
    nobody pays for node models nobody reads. A few nodes stay as the contract's pieces
    until read (their dump is made straight from them), many are columns (made by C loops).
    Compares equal to the tuple of its models.
    """

    __slots__ = ("_columns", "_models", "_pieces", "_rows")

    def __init__(self, rows: Sequence[Row] = (), models: tuple[ComposerNode, ...] | None = None):
        # Made from models (a validated payload), the rows wait until someone needs them.
        self._rows: Sequence[Row] | None = rows if models is None else None
        self._columns: Columns | None = None
        self._models = models
        self._pieces: tuple[list[str], bool] | None = None

    @classmethod
    def of(cls, models: Sequence[ComposerNode]) -> Nodes:
        return cls(models=tuple(models))

    @classmethod
    def from_columns(
        cls,
        kinds: Sequence[str],
        starts: Sequence[int],
        ends: Sequence[int],
        raws: Sequence[str],
        values: Sequence[str | None],
    ) -> Nodes:
        """Nodes from columns of equal length, which the caller no longer changes."""
        nodes = cls()
        nodes._rows, nodes._columns = None, (kinds, starts, ends, raws, values)
        return nodes

    @classmethod
    def from_pieces(cls, parts: list[str], astral: bool) -> Nodes:
        """Nodes from ``contract.pieces``' list, which the caller no longer changes. Many
        pieces become columns at once, in the thread that builds the payload (a big input's
        worker thread); a few wait as they are.
        """
        if len(parts) > pieces._FEW:
            return cls.from_columns(*pieces.columns(parts, astral))
        nodes = _new(cls)
        nodes._rows = nodes._columns = nodes._models = None
        nodes._pieces = (parts, astral)
        return nodes

    @property
    def rows(self) -> Sequence[Row]:
        if self._rows is None:
            if self._columns is not None:
                self._rows = tuple(zip(*self._columns, strict=True))
            elif self._pieces is not None:
                self._rows = pieces.rows(*self._pieces)
            else:
                self._rows = _rows(self._models or ())
        return self._rows

    @property
    def columns(self) -> Columns:
        if self._columns is None:
            columns = tuple(zip(*self.rows, strict=True))
            self._columns = columns or ((), (), (), (), ())  # type: ignore[assignment]
        return self._columns  # type: ignore[return-value]

    def models(self) -> tuple[ComposerNode, ...]:
        if self._models is None:
            self._models = _NODE_MODELS.validate_python(self.dump())
        return self._models

    def dump(self) -> list[dict[str, Any]]:
        """The nodes as ``model_dump`` gives them (no node has a None field to exclude)."""
        columns = self._columns
        rows = zip(*columns, strict=True) if columns is not None else self.rows
        key = pieces.VALUE_KEY
        return [
            {"kind": kind, "start": start, "end": end, "raw": raw}
            if value is None
            else {"kind": kind, "start": start, "end": end, "raw": raw, key[kind]: value}
            for kind, start, end, raw, value in rows
        ]

    def _few(self) -> list[str] | None:
        """The contract's pieces when nothing else was made of them yet."""
        if self._pieces is None or self._rows is not None or self._columns is not None:
            return None
        return self._pieces[0]

    def command_names(self) -> list[str | None]:
        """The names of the slash_command nodes, in order; read from a few pieces as they
        are (a strict runtime's check of every input, which needs no rows).
        """
        parts = self._few()
        if parts is not None:  # text, then (raw, kind, value, text) per node
            return [v for k, v in zip(parts[2::4], parts[3::4], strict=True) if k == SLASH]
        kinds, *_, values = self.columns
        return list(compress(values, map(eq, kinds, repeat(SLASH))))

    def __bool__(self) -> bool:
        parts = self._few()
        if parts is not None:
            return len(parts) > 1 or bool(parts[0])
        return len(self) > 0

    def __len__(self) -> int:
        if self._models is not None:
            return len(self._models)
        return len(self._columns[0]) if self._columns is not None else len(self.rows)

    @overload
    def __getitem__(self, index: int) -> ComposerNode: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[ComposerNode, ...]: ...
    def __getitem__(self, index: int | slice) -> ComposerNode | tuple[ComposerNode, ...]:
        return self.models()[index]

    def __iter__(self) -> Iterator[ComposerNode]:
        return iter(self.models())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Nodes):
            return tuple(self.rows) == tuple(other.rows)
        if isinstance(other, (tuple, list)):
            return self.models() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self.rows))

    def __repr__(self) -> str:
        return repr(self.models())

    def __reduce__(self) -> tuple[Any, ...]:
        return (Nodes, (tuple(self.rows),))

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        models = handler.generate_schema(tuple[ComposerNode, ...])
        return core_schema.union_schema(
            [
                core_schema.is_instance_schema(cls),
                core_schema.no_info_after_validator_function(cls.of, models),
            ],
            serialization=core_schema.plain_serializer_function_ser_schema(
                _dump_nodes, return_schema=_DUMPED
            ),
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        # Documented as the tuple of node models it validates and dumps as.
        assert schema["type"] == "union"
        return handler(schema["choices"][1])


def as_nodes(nodes: Sequence[ComposerNode]) -> Nodes:
    """``payload.nodes`` as ``Nodes``, also of a payload made with ``model_construct``."""
    return nodes if isinstance(nodes, Nodes) else Nodes(_rows(nodes))


def command_names(nodes: Sequence[ComposerNode]) -> list[str | None]:
    """The names of the slash_command nodes of ``nodes``, in order: one call for a strict
    runtime's check of every input.
    """
    return as_nodes(nodes).command_names()


def _rows(models: Sequence[ComposerNode]) -> tuple[Row, ...]:
    return tuple(
        (n.kind, n.start, n.end, n.raw, None if isinstance(n, TextNode) else _value(n))
        for n in models
    )


def _value(node: ComposerNode) -> str:
    return node.path if isinstance(node, FileNode) else node.name  # type: ignore[union-attr]


def _dump_nodes(nodes: Nodes | Sequence[ComposerNode]) -> tuple[dict[str, Any], ...]:
    return tuple(as_nodes(nodes).dump())


def _field(schema: core_schema.CoreSchema, required: bool = True) -> core_schema.TypedDictField:
    return core_schema.typed_dict_field(schema, required=required)


# What a dump of the nodes is, typed, so that pydantic's pass over it is a quick one.
_DUMPED = core_schema.tuple_schema(
    [
        core_schema.typed_dict_schema(
            {
                "kind": _field(core_schema.str_schema()),
                "start": _field(core_schema.int_schema()),
                "end": _field(core_schema.int_schema()),
                "raw": _field(core_schema.str_schema()),
                "name": _field(core_schema.str_schema(), required=False),
                "path": _field(core_schema.str_schema(), required=False),
            }
        )
    ],
    variadic_item_index=0,
)


# ``Nodes | None`` made once: the expression makes a new union object each time.
_PLAIN = (Nodes, type(None))


class ComposerInputPayload(BaseModel):
    model_config = ConfigDict(frozen=True)

    source: str
    nodes: Nodes | None = None

    def model_dump(
        self, *, mode: str = "python", exclude_none: bool = False, **options: Any
    ) -> dict[str, Any]:
        """pydantic's dump, without its pass over every node dict (tens of milliseconds for
        a message of 1 MiB): the nodes' own dump is plain ``str`` and ``int`` already, the
        same in both modes. Any other option goes through pydantic.
        """
        nodes = self.nodes
        if options or mode not in ("python", "json") or not isinstance(nodes, _PLAIN):
            return super().model_dump(mode=mode, exclude_none=exclude_none, **options)
        if nodes is None:
            dump: dict[str, Any] = {"source": self.source}
            if not exclude_none:
                dump["nodes"] = None
            return dump
        dumped = nodes.dump()
        return {"source": self.source, "nodes": dumped if mode == "json" else tuple(dumped)}


class ComposerInputMessage(BaseModel):
    """The typed inbox message forwarded to a runtime."""

    model_config = ConfigDict(frozen=True)

    type: Literal["composer_input"] = "composer_input"
    mode: Literal["immediate", "queued", "paused", "steer"] = "immediate"
    payload: ComposerInputPayload


# The slots pydantic keeps a model's state in, set directly by ``built_payload``.
_new = object.__new__
_set_dict = object.__setattr__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def built_payload(source: str, nodes: Nodes) -> ComposerInputPayload:
    """``ComposerInputPayload(source=source, nodes=nodes)`` without its validation, which
    could not fail for a payload the contract built (a ``str`` and its ``Nodes``): the same
    model, fields set and all, in about 15% less time.
    """
    payload = _new(ComposerInputPayload)
    _set_dict(payload, "__dict__", {"source": source, "nodes": nodes})
    _set_fields_set(payload, {"source", "nodes"})
    _set_extra(payload, None)
    _set_private(payload, None)
    return payload


def built_message(payload: ComposerInputPayload) -> ComposerInputMessage:
    """``ComposerInputMessage(payload=payload)`` without its validation, which keeps a
    ``ComposerInputPayload`` as it is: the same model, fields set and all (the core makes
    one per forwarded input).
    """
    message = _new(ComposerInputMessage)
    _set_dict(
        message, "__dict__", {"type": "composer_input", "mode": "immediate", "payload": payload}
    )
    _set_fields_set(message, {"payload"})
    _set_extra(message, None)
    _set_private(message, None)
    return message
