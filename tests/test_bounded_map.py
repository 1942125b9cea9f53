"""The bounded maps behind dedupe windows and caches: an entry is gone once older than the
time to live, whether or not anything was written since, and the map never holds more than
its size.
"""

from __future__ import annotations

from gateway.store import BoundedTTLMap, DedupeWindow


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_entry_is_read_until_its_time_to_live_ends_without_a_write_since() -> None:
    clock = Clock()
    seen: BoundedTTLMap[str] = BoundedTTLMap(10, 60.0, clock)
    seen.set("a", "first")
    clock.now += 59.9
    assert seen.get("a") == "first"
    clock.now += 0.1
    assert seen.get("a") is None
    assert len(seen) == 0


def test_the_map_keeps_its_newest_entries_within_its_size() -> None:
    clock = Clock()
    seen: BoundedTTLMap[int] = BoundedTTLMap(3, 60.0, clock)
    for n in range(5):
        clock.now += 1
        seen.set(str(n), n)
    assert len(seen) == 3
    assert [seen.get(str(n)) for n in range(5)] == [None, None, 2, 3, 4]
    seen.set("2", 20)  # written again: the newest
    seen.set("5", 5)
    assert [seen.get(k) for k in ("2", "3", "4", "5")] == [20, None, 4, 5]


def test_a_repeat_is_a_repeat_within_the_window_only() -> None:
    repeats: list[None] = []
    window = DedupeWindow(maxsize=10, ttl=3600.0, on_repeat=lambda: repeats.append(None))
    window._seen._clock = clock = Clock()
    assert window.first("update-1")
    assert not window.first("update-1")
    clock.now += 3600
    assert window.first("update-1")
    assert len(repeats) == 1
