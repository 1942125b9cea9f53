"""Outbound calls paced under the platforms' rate limits (docs/rate-limits.md)."""

from .pacer import Budget, LocalBudget, Pacer, Rate, previewing
from .shared import SharedBudget, budget

__all__ = ["Budget", "LocalBudget", "Pacer", "Rate", "SharedBudget", "budget", "previewing"]
