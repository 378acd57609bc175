"""Prometheus metrics: requests and latency per route, games applied, group-commit sizes, refits by outcome,
where the reads that tolerate a lag were answered, and whether each replica is read.

With several worker processes, ``melo serve`` points ``PROMETHEUS_MULTIPROC_DIR``
at a fresh directory so that every worker's numbers are summed in each scrape
of ``GET /metrics``.
"""

from __future__ import annotations

import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

REQUESTS = Counter("melo_requests_total", "HTTP requests answered.", ["method", "route", "status"])
LATENCY = Histogram(
    "melo_request_seconds",
    "Time to answer an HTTP request.",
    ["method", "route"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
GAMES = Counter("melo_games_applied_total", "Games applied to ratings by posts and batches.")
GROUPS = Histogram(
    "melo_commit_group_posts", "Posts applied together in one group commit.", buckets=(1, 2, 4, 8, 16, 32, 64, 128)
)
REFITS = Counter("melo_refits_total", "Refit jobs finished, by outcome.", ["outcome"])
LAG_TOLERANT = Counter(
    "melo_lag_tolerant_reads_total",
    "Reads that tolerate a short lag (leaderboards, profiles, reports), by the database that answered them: a "
    "replica of MELO_READ_DATABASE_URL, or the primary.",
    ["served_by"],
)
REPLICA_READ = Gauge(
    "melo_replica_read",
    "1 while every worker reads the replica (numbered as MELO_READ_DATABASE_URL lists them, from 1): it keeps up; "
    "0 while some worker sends its reads to the primary instead.",
    ["replica"],
    multiprocess_mode="livemin",
)


def exposition() -> tuple[bytes, str]:
    """The metrics in Prometheus text format, and its content type: every worker's (multi-process mode) or this
    process's."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(), CONTENT_TYPE_LATEST
