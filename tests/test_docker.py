"""The Docker image, built and run as the README says: skipped, saying why, where no Docker engine runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from devtools.server import free_port

ROOT = Path(__file__).resolve().parent.parent


def _engine() -> str | None:
    """Why the image cannot be tested here, or None if it can."""
    if shutil.which("docker") is None:
        return "no docker command on this machine"
    info = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=30)
    if info.returncode != 0:
        return "no Docker engine answers here: " + (info.stderr.strip().splitlines() or ["docker info failed"])[-1]
    return None


@pytest.mark.skipif(_engine() is not None, reason=str(_engine()))
def test_the_image_serves_sqlite_data_kept_in_a_host_directory(tmp_path):
    subprocess.run(["docker", "build", "-t", "melo-test", str(ROOT)], check=True, timeout=1800)
    data = tmp_path / "data"
    data.mkdir()
    port = free_port()
    run = ["docker", "run", "-d", "--rm", "-p", f"{port}:8000", "-e", "MELO_ADMIN_KEY=test-key"]
    run += ["--user", f"{os.getuid()}:{os.getgid()}", "-v", f"{data}:/app/data", "melo-test"]
    container = subprocess.run(run, check=True, capture_output=True, text=True).stdout.strip()
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.time() + 60
        while True:
            try:
                if httpx.get(base + "/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.time() < deadline, subprocess.run(["docker", "logs", container], capture_output=True).stderr
            time.sleep(0.5)
        admin = {"Authorization": "Bearer test-key"}
        assert httpx.post(base + "/v1/ladders", json={"slug": "office"}, headers=admin).status_code == 201
        assert httpx.get(base + "/v1/ladders/office/leaderboard").status_code == 200
        assert (data / "melo.db").exists()  # the data is in the host directory
    finally:
        subprocess.run(["docker", "stop", container], capture_output=True)
