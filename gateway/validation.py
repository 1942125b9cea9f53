"""Pydantic validation errors as one readable line, for configuration and request bodies."""

from __future__ import annotations

from pydantic import ValidationError

_PREFIX = "Value error, "  # pydantic's prefix for a validator's own message


def describe_validation_error(exc: ValidationError, root: str = "") -> str:
    """One sentence per problem: ``text: Input should be a valid string``; a problem of the
    whole object is named ``root`` (or has no name when ``root`` is empty).
    """
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or root
        message = error["msg"].removeprefix(_PREFIX)
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)
