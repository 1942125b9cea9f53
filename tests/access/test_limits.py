"""The per-sender limits on their own: one sender's inputs in the gateway at once are capped
across conversations (said once per window), and at most ``size`` senders are remembered,
the least recently seen forgotten first.
"""

from __future__ import annotations

from gateway.access import Over, SenderLimits


async def test_one_senders_inputs_at_once_are_capped_and_told_once() -> None:
    limits = SenderLimits(per_minute=0, burst=5, max_inside=2)  # no bucket: the cap alone
    assert [await limits.take("telegram:41", now=0.0) for _ in range(2)] == [None, None]
    assert await limits.take("telegram:41", now=0.0) == Over(1, tell=True)
    assert await limits.take("telegram:41", now=0.5) == Over(1, tell=False)  # same window
    assert await limits.take("telegram:42", now=0.5) is None  # another sender's own cap
    limits.leave("telegram:41")  # one of the two is done
    assert await limits.take("telegram:41", now=0.6) is None


async def test_the_least_recently_seen_sender_is_forgotten_first() -> None:
    limits = SenderLimits(per_minute=60, burst=2, max_inside=0, size=3)
    for _ in range(2):
        assert await limits.take("a", now=0.0) is None
    assert await limits.take("a", now=0.0) is not None  # a's burst is spent
    for sender in ("b", "c", "d"):  # three others since: a is the one forgotten
        assert await limits.take(sender, now=0.0) is None
    assert await limits.take("a", now=0.0) is None  # a fresh bucket
    assert await limits.take("c", now=0.0) is None  # c is remembered: its second token
    assert await limits.take("c", now=0.0) is not None
