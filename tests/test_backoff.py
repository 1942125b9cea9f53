"""The retry policy shared by the platform channels."""

from __future__ import annotations

import pytest

from gateway.backoff import Backoff, retrying


def test_waits_double_up_to_the_cap_each_in_the_upper_half_of_its_range() -> None:
    policy = Backoff(base=0.5, cap=8.0)
    for retry, ceiling in enumerate([0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]):
        waits = [policy.delay(retry) for _ in range(200)]
        assert all(ceiling / 2 <= wait <= ceiling for wait in waits)
        assert len(set(waits)) > 1  # jittered


async def test_transient_failures_are_retried_until_the_attempts_run_out() -> None:
    calls: list[int] = []

    async def send() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionResetError("reset")
        return "sent"

    assert await retrying(send, lambda exc: str(exc), Backoff(base=0.001)) == "sent"
    assert len(calls) == 3

    calls.clear()
    with pytest.raises(ConnectionResetError):
        await retrying(send, lambda exc: str(exc), Backoff(attempts=2, base=0.001))
    assert len(calls) == 2


async def test_a_failure_that_is_not_transient_is_raised_at_once() -> None:
    calls: list[int] = []

    async def send() -> None:
        calls.append(1)
        raise ValueError("bad request")

    with pytest.raises(ValueError):
        await retrying(send, lambda exc: None, Backoff(base=0.001))
    assert len(calls) == 1
