"""Prometheus instruments of one gateway, in a registry of its own (several gateways in one
process, as in the tests, never share counters). The core and the channels call the small
methods here; ``GET /metrics`` renders the registry.

Labels have few values each: channel, runtime and platform names, contract kinds and
categories, API method names, outcomes. Never a conversation, a user or a URL.
"""

from __future__ import annotations

import re
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    generate_latest,
)
from prometheus_client import metrics as prometheus_metrics
from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

from .inbound import Outcome

# Seconds: a turn is anything from an echo to minutes of agent work.
TURN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
FIRST_DELTA_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
STORE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)
_METHOD = re.compile(r"[A-Za-z][A-Za-z0-9_.]{0,63}")

StoreObserver = Callable[[str, float], None]
"""Called with (operation, seconds) after each operation of a store."""


@dataclass(frozen=True, slots=True)
class TurnMetrics:
    """The turn histograms of one channel and runtime (``Metrics.turns``), looked up once
    per conversation rather than per turn.
    """

    seconds: Any  # slashgate_turn_seconds{channel, runtime}
    first_delta: Any  # slashgate_turn_first_delta_seconds{channel, runtime}


class _Count:
    """A counter's child as a plain number (see ``_Family``)."""

    __slots__ = ("created", "value")

    def __init__(self) -> None:
        self.value = 0
        self.created = time.time()

    def inc(self) -> None:
        self.value += 1


class _Timing:
    """A histogram's child as plain numbers: the count per bucket (not cumulative) and the sum."""

    __slots__ = ("bounds", "counts", "created", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last one is +Inf's
        self.total = 0.0
        self.created = time.time()

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(self.bounds, seconds)] += 1  # the first bound >= seconds
        self.total += seconds


class _Family:
    """A labelled counter (no ``buckets``) or histogram updated on every turn: its children
    are plain numbers, moved without prometheus_client's lock and checks (the event loop is
    the only writer), and exposed with the samples prometheus_client gives its own
    (``_total`` or ``_bucket``/``_count``/``_sum``, and ``_created``).
    """

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: list[str],
        registry: CollectorRegistry,
        buckets: tuple[float, ...] | None = None,
    ) -> None:
        self.name, self.documentation, self.labelnames = name, documentation, labelnames
        self.bounds = None if buckets is None else tuple(float(b) for b in buckets)
        self._children: dict[tuple[str, ...], Any] = {}
        registry.register(self)

    def labels(self, *values: str) -> Any:
        child = self._children.get(values)
        if child is None:
            child = _Count() if self.bounds is None else _Timing(self.bounds)
            self._children[values] = child
        return child

    def _family(self) -> Metric:
        if self.bounds is None:
            return CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
        return HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def describe(self) -> list[Metric]:
        return [self._family()]

    def collect(self) -> list[Metric]:
        created = getattr(prometheus_metrics, "_use_created", True)  # as prometheus_client
        children = list(self._children.items())
        if self.bounds is None:
            counter = CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
            for values, count in children:
                counter.add_metric(values, float(count.value), count.created if created else None)
            return [counter]
        histogram = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        les = (*map(floatToGoString, self.bounds), "+Inf")
        for values, timing in children:
            cumulative, buckets = 0.0, []
            for le, n in zip(les, timing.counts, strict=True):
                cumulative += n
                buckets.append((le, cumulative))
            histogram.add_metric(values, buckets, timing.total)
            if created:
                labels = dict(zip(self.labelnames, values, strict=True))
                histogram.samples.append(Sample(f"{self.name}_created", labels, timing.created))
        return [histogram]


class _WithoutCreated(Collector):
    """A registry's metrics less their ``*_created`` samples: in Prometheus' text format each
    is a series of its own (a timestamp per counter and histogram child) that few ask for.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterable[Metric]:
        for metric in self._registry.collect():  # families built afresh for each scrape
            metric.samples = [s for s in metric.samples if not s.name.endswith("_created")]
            yield metric


class Metrics:
    def __init__(self, created: bool = False) -> None:
        """``created``: expose the ``*_created`` series too (prometheus_client's default)."""
        self.registry = registry = CollectorRegistry(auto_describe=True)
        self._exposed: Collector = registry if created else _WithoutCreated(registry)
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        # (channel, classification, reply category) -> the children ``handled`` moves.
        self._handled: dict[tuple[str, str, str | None], tuple[Any, Any]] = {}
        self._turns: dict[tuple[str, str], TurnMetrics] = {}
        # The four moved on every turn are plain numbers (``_Family``).
        self.inputs = _Family(
            "slashgate_inputs",
            "Inputs handled, by channel and contract classification.",
            ["channel", "classification"],
            registry,
        )
        self.replies = _Family(
            "slashgate_replies",
            'Final replies, by channel and category ("ok" for a success).',
            ["channel", "category"],
            registry,
        )
        self.turn_seconds = _Family(
            "slashgate_turn_seconds",
            "Runtime turns, from start to the final reply.",
            ["channel", "runtime"],
            registry,
            TURN_BUCKETS,
        )
        self.first_delta_seconds = _Family(
            "slashgate_turn_first_delta_seconds",
            "Time from a turn's start to the first text the runtime streams.",
            ["channel", "runtime"],
            registry,
            FIRST_DELTA_BUCKETS,
        )
        self.queued = Gauge(
            "slashgate_queued_inputs",
            "Inputs waiting for their conversation's running turn.",
            registry=registry,
        )
        self.running = Gauge("slashgate_running_turns", "Turns running now.", registry=registry)
        self.runtime_starts = Counter(
            "slashgate_runtime_session_starts",
            "Runtime sessions opened (an agent process, an entity, ...).",
            ["runtime"],
            registry=registry,
        )
        self.runtime_restarts = Counter(
            "slashgate_runtime_session_restarts",
            "Sessions opened again for a conversation that had one (after /new or a failure).",
            ["runtime"],
            registry=registry,
        )
        self.runtime_crashes = Counter(
            "slashgate_runtime_crashes",
            "Runtime failures: a session that could not open, a turn whose stream broke.",
            ["runtime", "stage"],
            registry=registry,
        )
        # Moved on every platform call and store operation: plain numbers too.
        self.platform_requests = _Family(
            "slashgate_platform_requests",
            "Platform API calls (each attempt), by platform, method and outcome "
            "(ok, rate_limited, client_error, server_error, network_error).",
            ["platform", "method", "outcome"],
            registry,
        )
        self.platform_retries = Counter(
            "slashgate_platform_retries",
            "Platform API calls sent again, by platform, method and reason.",
            ["platform", "method", "reason"],
            registry=registry,
        )
        self.dedupe_hits = Counter(
            "slashgate_dedupe_hits",
            "Inputs delivered again and not run twice (platform retries, Idempotency-Key).",
            ["channel"],
            registry=registry,
        )
        self.store_seconds = _Family(
            "slashgate_store_seconds",
            "Durable state operations, by store and operation.",
            ["store", "operation"],
            registry,
            STORE_BUCKETS,
        )
        self.access_denied_total = Counter(
            "slashgate_access_denied",
            "Inputs the access policy refused, by channel and reason (docs/access.md).",
            ["channel", "reason"],
            registry=registry,
        )
        self.malformed_requests = Counter(
            "slashgate_malformed_requests",
            "HTTP requests answered with a 4xx, by status.",
            ["status"],
            registry=registry,
        )
        self.refused_requests = Counter(
            "slashgate_http_refused",
            "HTTP requests refused before their route ran, by reason: host (421), origin "
            "(403, another site's page), proxy (403, /v1 through a proxy without a token), "
            "content_type (415, a body that is not JSON).",
            ["reason"],
            registry=registry,
        )

    # -- exposition -----------------------------------------------------------------------

    content_type = CONTENT_TYPE_LATEST

    def render(self) -> bytes:
        return generate_latest(self._exposed)

    def watch(self, queued: Callable[[], float], running: Callable[[], float]) -> None:
        """Read the gauges from the core when scraped (nothing to keep in step per input)."""
        self.queued.set_function(queued)
        self.running.set_function(running)

    # -- the core -------------------------------------------------------------------------

    def _labelled(self, metric: Any, *values: str) -> Any:
        """``metric.labels(*values)``, looked up once: prometheus-client's own lookup costs
        more than the increment, and every label here has a handful of values.
        """
        key = (id(metric), values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    def handled(self, channel: str, outcome: Outcome) -> None:
        reply = outcome.reply
        # "" for no reply: a category None means success ("ok").
        key = (channel, outcome.classification.kind, "" if reply is None else reply.category)
        children = self._handled.get(key)
        if children is None:
            inputs = self._labelled(self.inputs, channel, key[1])
            category = key[2] or "ok"
            replies = None if reply is None else self._labelled(self.replies, channel, category)
            children = self._handled[key] = (inputs, replies)
        # ``inc()`` of each, in place: every input passes here.
        children[0].value += 1
        if children[1] is not None:
            children[1].value += 1

    def turns(self, channel: str, runtime: str) -> TurnMetrics:
        """The turn histograms of conversations on ``channel`` served by ``runtime``."""
        turns = self._turns.get((channel, runtime))
        if turns is None:
            turns = self._turns[channel, runtime] = TurnMetrics(
                self._labelled(self.turn_seconds, channel, runtime),
                self._labelled(self.first_delta_seconds, channel, runtime),
            )
        return turns

    def session_opened(self, runtime: str, again: bool) -> None:
        self._labelled(self.runtime_starts, runtime).inc()
        if again:
            self._labelled(self.runtime_restarts, runtime).inc()

    def runtime_crashed(self, runtime: str, stage: str) -> None:
        self._labelled(self.runtime_crashes, runtime, stage).inc()

    # -- channels -------------------------------------------------------------------------

    def platform_request(self, platform: str, method: str, outcome: str) -> None:
        # A ``_Family`` keeps its children itself: no second lookup table (``_labelled``).
        self.platform_requests.labels(platform, api_method(method), outcome).inc()

    def platform_retry(self, platform: str, method: str, reason: str) -> None:
        self._labelled(self.platform_retries, platform, api_method(method), reason).inc()

    def dedupe_hit(self, channel: str) -> None:
        """One input delivered again on ``channel`` and not run twice."""
        self._labelled(self.dedupe_hits, channel).inc()

    def access_denied(self, channel: str, reason: str) -> None:
        self.access_denied_total.labels(channel, reason).inc()

    def malformed_request(self, status: int) -> None:
        self._labelled(self.malformed_requests, str(status)).inc()

    def http_refused(self, reason: str) -> None:
        """One request refused by the server's checks (slashgate/guard.py) or its media type."""
        self._labelled(self.refused_requests, reason).inc()

    # -- state ----------------------------------------------------------------------------

    def store_observer(self, store: str) -> StoreObserver:
        """``observe(operation, seconds)`` for one store (``"state"``, ``"journal"``)."""

        labels = self.store_seconds.labels

        def observe(operation: str, seconds: float) -> None:
            labels(store, operation).observe(seconds)

        return observe

    @contextmanager
    def timed(self, store: str, operation: str) -> Iterator[None]:
        """``with metrics.timed("journal", "append"): ...`` times one store operation."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.store_seconds.labels(store, operation).observe(time.perf_counter() - started)


def api_method(name: str) -> str:
    """A platform method name as a label: API method names pass, anything else is "other"."""
    return name if _METHOD.fullmatch(name) else "other"
