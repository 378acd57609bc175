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
from pathlib import Path

import httpx

ADMIN_KEY = "test-admin-key"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(base: str, what: str = "the server", seconds: float = 30, path: str = "/healthz") -> None:
    """Wait until ``base`` answers ``path`` with 200."""
    deadline = time.time() + seconds
    # One client for all the tries: each ``httpx.get`` builds a TLS context (~40 ms of CPU, loading the CA bundle),
    # which, ten times a second, took a good part of a core from the server starting beside it.
    with httpx.Client() as client:
        while True:
            try:
                if client.get(base + path).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert time.time() < deadline, f"{what} did not start"
            time.sleep(0.1)


#: The repository: a server's working folder, so that an app beside the service (``bench.trivial:app``) imports.
ROOT = Path(__file__).resolve().parent.parent


class Server:
    """``uvicorn {app}`` (the service by default) in a subprocess on a free loopback port, with the admin key the
    tests use and ``env`` on top of this process's environment; started once it answers ``ready`` with 200 (within
    ``seconds``).  ``base`` is its URL."""

    def __init__(
        self,
        database_url: str,
        workers: int = 1,
        env: dict[str, str] | None = None,
        app: str = "app.main:app",
        ready: str = "/healthz",
        access_log: bool = True,
        seconds: float = 30,
    ) -> None:
        self.port = free_port()
        env = os.environ | {"MELO_DATABASE_URL": database_url, "MELO_ADMIN_KEY": ADMIN_KEY} | (env or {})
        cmd = [sys.executable, "-m", "uvicorn", app, "--port", str(self.port), "--workers", str(workers)]
        cmd += ["--log-level", "warning"] + ([] if access_log else ["--no-access-log"])
        self.proc = subprocess.Popen(cmd, env=env, cwd=ROOT)
        self.base = f"http://127.0.0.1:{self.port}"
        try:
            wait_up(self.base, seconds=seconds, path=ready)
        except AssertionError:
            self.stop()
            raise

    def stop(self) -> bool:
        """SIGTERM (not SIGKILL: uvicorn's workers would be left running, with no parent); whether it stopped within
        30 s.  One that did not is said on stderr and killed: a server that will not stop is a finding."""
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
            return True
        except subprocess.TimeoutExpired:
            print(f"the server on port {self.port} did not stop within 30 s of SIGTERM; killed", file=sys.stderr)
            self.proc.kill()
            self.proc.wait()
            return False


#: The server process behind each live server's base URL (a test may stop it itself).
LIVE: dict[str, subprocess.Popen] = {}


@contextmanager
def live_server(database_url: str, workers: int = 1, env: dict[str, str] | None = None) -> Iterator[str]:
    """A real server (:class:`Server`) for the length of the block; yields its base URL."""
    server = Server(database_url, workers, env)
    LIVE[server.base] = server.proc
    try:
        yield server.base
    finally:
        LIVE.pop(server.base)
        assert server.stop(), "the server did not stop within 30 s of SIGTERM"
