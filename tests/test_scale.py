"""Nothing quadratic in players: a refit and every ladder-wide report of a large ladder in an address space too
small for a players × players array of booleans beside what the work needs.

The same on PostgreSQL is in ``test_scale_postgres.py``: a file of its own, so that the two, the longest tests of
the suite, run on two workers at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_scale(url: str, players: int, cap_gb: float) -> dict:
    cmd = [sys.executable, "-m", "tests.scale", url, str(players), str(cap_gb)]
    # One BLAS thread: its buffers, reserved per core, would make the cap depend on the machine's cores.
    env = os.environ | {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_40000_players_refit_and_report_in_1_5_gb(tmp_path):
    """A players × players array of booleans alone would take 1.6 GB here (the work peaks at about 650 MB)."""
    found = run_scale(f"sqlite:///{tmp_path}/big.db", 40_000, 1.5)
    assert found["refit"] == "done", found
    assert found["consistent"], found
