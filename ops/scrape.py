"""Read a process's /metrics into {(sample name, labels): value}: the benchmarks read the
workers' histograms so (ops/bench/launches.py), and the tests every process's series."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples}  # fmt: skip


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sample's value; 0 when the process has not set it."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def has(samples: Samples, name: str, **labels: str) -> bool:
    """Whether some sample of ``name`` carries every label given."""
    wanted = set(labels.items())
    return any(found == name and wanted <= set(held) for found, held in samples)
