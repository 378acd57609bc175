"""Nothing quadratic in players on PostgreSQL either: ``test_scale.py``'s refit and reports of a large ladder, in
4 GB of address space."""

from __future__ import annotations

from devtools.postgres import PostgresServer
from tests.test_scale import run_scale


def test_the_same_on_postgresql(postgres: PostgresServer):
    url = postgres.create_database("scale")
    try:
        found = run_scale(url, 50_000)
    finally:
        postgres.drop_database("scale")  # the largest database of the session's server
    assert found["refit"] == "done" and found["consistent"], found
