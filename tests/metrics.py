"""Reading ``GET /metrics`` as Prometheus does: the samples of the text exposition format."""

from __future__ import annotations

from dataclasses import dataclass

import aiohttp
from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class Scrape:
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float]

    def value(self, name: str, **labels: str) -> float:
        """The sample's value; 0 when it is not there (a counter that never moved)."""
        return self.samples.get((name, frozenset(labels.items())), 0.0)

    def calls(self, platform: str, method: str, outcome: str) -> float:
        """Attempts of one platform API method with one outcome."""
        labels = {"platform": platform, "method": method, "outcome": outcome}
        return self.value("slashgate_platform_requests_total", **labels)

    def retries(self, platform: str, method: str, reason: str) -> float:
        labels = {"platform": platform, "method": method, "reason": reason}
        return self.value("slashgate_platform_retries_total", **labels)

    def total(self, name: str, **labels: str) -> float:
        """The sum over every sample of ``name`` whose labels include ``labels``."""
        wanted = set(labels.items())
        return sum(v for (n, found), v in self.samples.items() if n == name and wanted <= found)


async def scrape(url: str) -> Scrape:
    async with aiohttp.ClientSession() as http, http.get(f"{url}/metrics") as response:
        assert response.status == 200
        assert response.content_type == "text/plain"
        text = await response.text()
    samples = {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    return Scrape(samples)
