"""Discord's request signature: Ed25519 over the timestamp and the body as sent, with the
application's public key (PyNaCl, as hikari verifies), and a timestamp near our clock.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from nacl.exceptions import BadSignatureError
from nacl.signing import VerifyKey

SIGNATURE = "X-Signature-Ed25519"
TIMESTAMP = "X-Signature-Timestamp"
MAX_AGE = 60 * 5  # seconds: an older (or later) timestamp is refused, as for Slack


class Verifier:
    def __init__(self, public_key: str) -> None:
        self._key = VerifyKey(bytes.fromhex(public_key))

    def signed(self, headers: Mapping[str, str], body: bytes) -> bool:
        """The headers carry a valid signature of ``body``, made at most ``MAX_AGE`` ago."""
        stamp = headers.get(TIMESTAMP)
        signature = headers.get(SIGNATURE)
        if stamp is None or signature is None:
            return False
        try:
            if abs(time.time() - int(stamp)) > MAX_AGE:
                return False
            self._key.verify(stamp.encode() + body, bytes.fromhex(signature))
        except (ValueError, UnicodeEncodeError, BadSignatureError):
            # Not a number, not hex, not 64 bytes, or not the key's signature.
            return False
        return True
