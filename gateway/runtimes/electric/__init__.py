"""The Electric Agents runtime: each conversation is an entity on an Electric Agents server."""

from .runtime import ElectricRuntime

__all__ = ["ElectricRuntime"]
