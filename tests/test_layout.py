"""The source layout that docs/architecture.md promises: imports go one way (app -> channels ->
gateway -> contract), no two files import each other through any path, no file is over 400
lines, channels see of the gateway its published interface (gateway/api.py) and the helpers
named here, never the core, and no channel imports another one's modules (what they share is
in channels/*.py). Read from the source with ``ast``: ``TYPE_CHECKING`` and
in-function imports count.

``python tests/test_layout.py`` prints the report.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Lower layers first: a module may import its own layer and the ones before it.
LAYERS = ("contract", "gateway", "channels", "slashgate")
MAX_LINES = 400
# The gateway's modules a channel may import besides gateway.api: helpers that hold none of
# the core's state.
CHANNEL_HELPERS = {
    "gateway.access": "the access settings of a chat channel (Ids, access_settings)",
    "gateway.addresses": "whether an address is public (the webhook's file URLs)",
    "gateway.attachments": "files: names, media types, limits, the refusal",
    "gateway.backoff": "platform calls tried again",
    "gateway.body": "request bodies read and parsed within limits",
    "gateway.composer": "a composer_input as JSON",
    "gateway.downloads": "a message's files fetched from the platform's hosts",
    "gateway.inventory": "a command's usage hint",
    "gateway.jsonslices": "JSON encoded from pieces",
    "gateway.logs": "the log lines' context",
    "gateway.offload": "big work off the event loop",
    "gateway.openapi": "the routes' part of the OpenAPI document",
    "gateway.pacing": "outbound calls under a platform's limits",
    "gateway.settings": "the gateway's settings, and rates",
    "gateway.state.private": "a file made for the gateway's user alone (0600)",
    "gateway.store": "bounded caches (BoundedTTLMap, DedupeWindow)",
    "gateway.tasks": "background tasks drained at stop",
    "gateway.validation": "settings rules and validation errors in words",
}


def modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the layers (packages by __init__)."""
    found = {}
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ours that ``name`` imports (the innermost module each import names)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def ours(target: str) -> str | None:
        while target and target not in known:
            target = target.rpartition(".")[0]
        return target or None

    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            # ``from package import module`` imports the module; else the package's name.
            targets = [
                f"{module}.{a.name}" if f"{module}.{a.name}" in known else module
                for a in node.names
            ]
        else:
            continue
        found.update(t for t in map(ours, targets) if t is not None and t != name)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def upward(edges: dict[str, set[str]]) -> list[str]:
    def layer(name: str) -> int:
        return LAYERS.index(name.split(".")[0])

    return sorted(
        f"{name} -> {target}"
        for name, targets in edges.items()
        for target in targets
        if layer(target) > layer(name)
    )


def reaching_in(edges: dict[str, set[str]]) -> list[str]:
    """Imports from channels/ of a gateway module that is neither gateway.api nor a helper
    named in CHANNEL_HELPERS (gateway.core above all).
    """
    return sorted(
        f"{name} -> {target}"
        for name, targets in edges.items()
        if name.split(".")[0] == "channels"
        for target in targets
        if target.split(".")[0] == "gateway"
        and target != "gateway.api"
        and target not in CHANNEL_HELPERS
    )


def channel_of(name: str, packages: set[str]) -> str | None:
    """The channel folder a module of channels/ is in; None for a module the channels share
    (channels/text.py and the like).
    """
    parts = name.split(".")
    if parts[0] != "channels" or len(parts) == 1 or (len(parts) == 2 and name not in packages):
        return None
    return parts[1]


def crossing(edges: dict[str, set[str]], packages: set[str]) -> list[str]:
    """Imports of a channel's module from another channel's folder, or from a shared module."""
    return sorted(
        f"{name} -> {target}"
        for name, targets in edges.items()
        if name.split(".")[0] == "channels"
        for target in targets
        if (theirs := channel_of(target, packages)) is not None
        and theirs != channel_of(name, packages)
    )


def packages() -> set[str]:
    return {name for name, path in modules().items() if path.name == "__init__.py"}


def oversized() -> list[str]:
    return [
        f"{path.relative_to(ROOT)}: {lines} lines"
        for path in modules().values()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    ]


def test_imports_go_one_way() -> None:
    assert upward(graph()) == []


def test_no_import_circles() -> None:
    assert circles(graph()) == []


def test_channels_see_the_gateway_through_its_interface() -> None:
    assert reaching_in(graph()) == []


def test_no_channel_imports_another_ones_modules() -> None:
    assert crossing(graph(), packages()) == []


def test_no_file_over_400_lines() -> None:
    assert oversized() == []


def test_the_checker_finds_a_circle_and_an_upward_import() -> None:
    edges = {
        "gateway.a": {"gateway.b"},
        "gateway.b": {"gateway.c"},
        "gateway.c": {"gateway.a", "channels.x"},
        "channels.x": {"gateway.a"},
    }
    assert circles(edges) == [["channels.x", "gateway.a", "gateway.b", "gateway.c"]]
    assert upward(edges) == ["gateway.c -> channels.x"]


def test_the_checker_finds_a_channel_reaching_into_the_core() -> None:
    edges = {
        "channels.x.a": {"gateway.api", "gateway.body", "gateway.core", "contract"},
        "channels.x.b": {"gateway.state", "channels.x.a"},
    }
    assert reaching_in(edges) == ["channels.x.a -> gateway.core", "channels.x.b -> gateway.state"]


def test_the_checker_finds_a_channel_importing_another_ones_module() -> None:
    edges = {
        "channels.x.a": {"channels.x.b", "channels.text", "channels.y.c"},
        "channels.text": {"channels.y"},
        "slashgate.registry": {"channels.y.c"},
    }
    assert crossing(edges, {"channels.x", "channels.y"}) == [
        "channels.text -> channels.y",
        "channels.x.a -> channels.y.c",
    ]


if __name__ == "__main__":
    edges = graph()
    found = circles(edges)
    print(f"import circles: {len(found)}")
    for component in found:
        print(f"  {len(component)}: {' '.join(component)}")
    print("upward imports:", *upward(edges) or ["none"], sep="\n  ")
    print("channels reaching into the core:", *reaching_in(edges) or ["none"], sep="\n  ")
    crossed = crossing(edges, packages())
    print("channels importing another one's modules:", *crossed or ["none"], sep="\n  ")
    print("files over 400 lines:", *oversized() or ["none"], sep="\n  ")
    failed = found or upward(edges) or reaching_in(edges) or crossed or oversized()
    sys.exit(1 if failed else 0)


def test_the_architecture_page_names_every_gateway_module() -> None:
    """docs/architecture.md's module map: a module of gateway/ (or its folder, for the
    packages under it) that the page does not name fails here.
    """
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    unnamed = []
    for path in sorted((ROOT / "gateway").rglob("*.py")):
        relative = path.relative_to(ROOT)
        if relative.name == "__init__.py" and relative.parent.name == "gateway":
            continue
        packages = relative.parents[:-2]  # gateway/runtimes/acp, gateway/runtimes (not gateway)
        named = str(relative) in page or any(f"{parent}/" in page for parent in packages)
        if not named and relative.name != "__init__.py":
            unnamed.append(str(relative))
    assert not unnamed, f"docs/architecture.md does not name: {unnamed}"
