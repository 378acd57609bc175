"""Nothing quadratic in players: a refit and every ladder-wide report of a large ladder in 4 GB of address space.

The same on PostgreSQL is in ``test_scale_postgres.py``: a file of its own, so that the two, the longest tests of
the suite, run on two workers at once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_scale(url: str, players: int) -> dict:
    cmd = [sys.executable, "-m", "tests.scale", url, str(players), "4"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_100000_players_refit_and_report_in_4_gb(tmp_path):
    """A players × players array of booleans alone would take 10 GB here."""
    found = run_scale(f"sqlite:///{tmp_path}/big.db", 100_000)
    assert found["refit"] == "done", found
    assert found["consistent"], found
