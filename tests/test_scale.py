"""Nothing quadratic in players: a refit and every ladder-wide report of a large ladder in an address space too
small for a players × players array of booleans beside what the work needs.

The same on PostgreSQL is in ``test_scale_postgres.py``: a file of its own, so that the two, the longest tests of
the suite, run on two workers at once."""

from __future__ import annotations

from tests.helpers import run_scale


def test_40000_players_refit_and_report_in_1_5_gb(tmp_path):
    """A players × players array of booleans alone would take 1.6 GB here (the work peaks at about 650 MB)."""
    found = run_scale(f"sqlite:///{tmp_path}/big.db", 40_000, 1.5)
    assert found["refit"] == "done", found
    assert found["consistent"], found
