"""`melo serve` as operators run it: several workers, summed Prometheus metrics, one JSON log line per request."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import httpx

from app.core.config import Settings
from app.core.migrate import upgrade
from devtools.server import ADMIN_KEY, free_port, wait_up


def test_metrics_are_summed_over_workers_and_each_request_is_logged_once(tmp_path):
    url = f"sqlite:///{tmp_path / 'melo.db'}"
    upgrade(Settings(database_url=url).sqlalchemy_url)
    port = free_port()
    env = os.environ | {"MELO_DATABASE_URL": url, "MELO_ADMIN_KEY": ADMIN_KEY, "MELO_MIGRATE_ON_START": "false"}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    cmd = [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--workers", "2"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_up(base)
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        key = httpx.post(base + "/v1/ladders", json={"slug": "office"}, headers=admin).json()["write_key"]
        game = {"sides": [{"players": ["ann"], "rank": 1}, {"players": ["bob"], "rank": 2}]}
        for _ in range(10):  # new connections: the workers share them
            assert (
                httpx.post(
                    base + "/v1/ladders/office/games", json=game, headers={"Authorization": f"Bearer {key}"}
                ).status_code
                == 201
            )
        for _ in range(30):
            assert httpx.get(base + "/v1/ladders/office/leaderboard").status_code == 200
        for _ in range(3):  # whichever worker answers the scrape, it sums both
            text = httpx.get(base + "/metrics").text
            board = re.search(
                r'melo_requests_total\{method="GET",route="/v1/ladders/\{slug\}/leaderboard",status="200"\} (\S+)', text
            )
            assert board and float(board.group(1)) == 30, text
            games = re.search(r"^melo_games_applied_total (\S+)", text, re.MULTILINE)
            assert games and float(games.group(1)) == 10
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    lines = [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]
    posted = [line for line in lines if line["route"] == "/v1/ladders/{slug}/games"]
    assert len(posted) == 10 and all(line["status"] == 201 and line["time"] for line in posted)
    assert len([line for line in lines if line["route"] == "/v1/ladders/{slug}/leaderboard"]) == 30
    assert key not in out.decode() + err.decode() and ADMIN_KEY not in out.decode() + err.decode()  # keys never logged
