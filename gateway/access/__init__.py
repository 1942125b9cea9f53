"""The access policy: who may talk to the agent, where, how often, and who may run what
(docs/access.md)."""

from .book import Book
from .limits import Over, SenderLimits
from .policy import Policy, Reason
from .records import Books
from .settings import Ids, access_settings
from .stage import Access, Pairing, Refusal

__all__ = [
    "Access",
    "Book",
    "Books",
    "Ids",
    "Over",
    "Pairing",
    "Policy",
    "Reason",
    "Refusal",
    "SenderLimits",
    "access_settings",
]
