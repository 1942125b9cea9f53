"""The ACP runtime: any Agent Client Protocol agent over stdio, through the official SDK."""

from .runtime import AcpRuntime
from .session import AcpSession

__all__ = ["AcpRuntime", "AcpSession"]
