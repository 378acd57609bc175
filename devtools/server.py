"""A live server of this service for tests, benchmarks and scripts: ``uvicorn app.main:app`` in a subprocess on a
free loopback port, with the admin key the tests use."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

ADMIN_KEY = "test-admin-key"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(base: str, what: str = "the server", seconds: float = 30) -> None:
    """Wait until ``base`` answers ``/healthz`` with 200."""
    deadline = time.time() + seconds
    # One client for all the tries: each ``httpx.get`` builds a TLS context (~40 ms of CPU, loading the CA bundle),
    # which, ten times a second, took a good part of a core from the server starting beside it.
    with httpx.Client() as client:
        while True:
            try:
                if client.get(base + "/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert time.time() < deadline, f"{what} did not start"
            time.sleep(0.1)


#: The server process behind each live server's base URL (a test may stop it itself).
LIVE: dict[str, subprocess.Popen] = {}


@contextmanager
def live_server(database_url: str, workers: int = 1, env: dict[str, str] | None = None) -> Iterator[str]:
    """A real server: ``uvicorn app.main:app`` in a subprocess on a free loopback port; yields its base URL."""
    port = free_port()
    env = os.environ | {"MELO_DATABASE_URL": database_url, "MELO_ADMIN_KEY": ADMIN_KEY} | (env or {})
    cmd = [sys.executable, "-m", "uvicorn", "app.main:app", "--port", str(port), "--workers", str(workers)]
    proc = subprocess.Popen([*cmd, "--log-level", "warning"], env=env)
    base = f"http://127.0.0.1:{port}"
    LIVE[base] = proc
    try:
        wait_up(base)
    except AssertionError:
        proc.terminate()  # not SIGKILL: uvicorn's workers would be left running, with no parent
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        LIVE.pop(base)
        raise
    try:
        yield base
    finally:
        LIVE.pop(base)
        proc.terminate()
        proc.wait(timeout=30)
