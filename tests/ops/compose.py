"""compose files read as ``docker compose`` reads them: ``${NAME:-default}`` filled in from
the environment it is given, YAML anchors and merge keys resolved.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

_VARIABLE = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}")


def load_compose(path: Path, environ: Mapping[str, str]) -> dict[str, Any]:
    """The file's services and volumes; an unset or empty variable takes its default."""
    text = path.read_text(encoding="utf-8")
    filled = _VARIABLE.sub(lambda found: environ.get(found[1]) or found[2] or "", text)
    loaded: dict[str, Any] = yaml.safe_load(filled)
    return loaded
