"""One ``/metrics`` for a collector run as several processes: the front's own series plus every shard's, summed.

Alert rules and dashboards are written against one collector's series (docs/collector.md), so the front exposes
exactly those names and labels: each sample is the sum over the processes that have it (counters, histogram
buckets and gauges such as pending spans all add up across shards). Two families are the front's alone: the
requests refused (a shard's refusal of a forwarded part is counted once, by the front, under the client's
transport) and the configured limits (the front reports what was configured, not each shard's share).
A shard that does not answer is left out of that scrape; its counters come back when it does.
"""

from __future__ import annotations

import logging
import urllib.request
from collections.abc import Callable, Iterable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

__all__ = ["FRONT_ONLY", "ShardMetrics", "merge_families"]

_log = logging.getLogger(__name__)
_REFUSED = "mast_collector_requests_refused"
FRONT_ONLY = frozenset({_REFUSED, "mast_collector_limit"})
_SCRAPE_TIMEOUT_S = 5.0


def merge_families(sources: Iterable[Iterable[Metric]]) -> list[Metric]:
    """Families with the same name merged, each (sample name, labels) summed; first seen order kept."""
    merged: dict[str, Metric] = {}
    sums: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]] = {}
    for families in sources:
        for family in families:
            if family.name not in merged:
                merged[family.name] = Metric(family.name, family.documentation, family.type, family.unit)
                sums[family.name] = {}
            values = sums[family.name]
            for sample in family.samples:
                key = (sample.name, tuple(sorted(sample.labels.items())))
                values[key] = values.get(key, 0.0) + sample.value
    for name, metric in merged.items():
        for (sample_name, labels), value in sums[name].items():
            metric.add_sample(sample_name, dict(labels), value)
    return list(merged.values())


class ShardMetrics:
    """A prometheus_client collector: the front's registry merged with each shard's scraped ``/metrics``."""

    def __init__(self, front: CollectorRegistry, shard_urls: Callable[[], list[str]]) -> None:
        self._front = front
        self._shard_urls = shard_urls

    def collect(self) -> Iterator[Metric]:
        sources: list[Iterable[Metric]] = [list(self._front.collect())]
        for url in self._shard_urls():
            try:
                with urllib.request.urlopen(url, timeout=_SCRAPE_TIMEOUT_S) as response:
                    text = response.read().decode()
            except OSError as exc:
                _log.warning("could not read a collector shard's metrics at %s: %s", url, exc)
                continue
            sources.append([f for f in text_string_to_metric_families(text) if f.name not in FRONT_ONLY])
        yield from merge_families(sources)

    def describe(self) -> list[Metric]:
        return []  # names are checked in the front's own registry; scraped ones vary with the shards


def registry_of(metrics: ShardMetrics) -> CollectorRegistry:
    """A registry whose only collector is ``metrics`` (what the front's /metrics serves)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(metrics)  # type: ignore[arg-type]
    return registry
