"""Nothing quadratic in players on PostgreSQL either: ``test_scale.py``'s refit and reports of a large ladder, in
1.2 GB of address space (a players × players array of booleans would take 0.9 GB beside the work's 500 MB)."""

from __future__ import annotations

from devtools.postgres import PostgresServer
from tests.helpers import run_scale


def test_the_same_on_postgresql(postgres: PostgresServer):
    url = postgres.create_database("scale")
    try:
        found = run_scale(url, 30_000, 1.2)
    finally:
        postgres.drop_database("scale")  # the largest database of the session's server
    assert found["refit"] == "done" and found["consistent"], found
