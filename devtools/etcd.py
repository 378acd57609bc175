"""A throwaway one-member etcd (Debian's ``etcd-server``) on loopback: the store a Patroni cluster elects its leader
in (devtools/patroni.py)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

from devtools.server import free_port


def installed() -> bool:
    return shutil.which("etcd") is not None


class Etcd:
    """One etcd member on two free loopback ports, its data in a temporary directory; stopped and started again
    on the same data (an outage of the store)."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="melo-etcd-"))
        self.port, self.peer_port = free_port(), free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        """``host:port`` of its client API (Patroni's ``etcd3.hosts``)."""
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        peer = f"http://127.0.0.1:{self.peer_port}"
        client = f"http://{self.address}"
        cmd = ["etcd", "--name", "melo", "--data-dir", str(self.dir / "data"), "--log-level", "error"]
        cmd += ["--listen-client-urls", client, "--advertise-client-urls", client]
        cmd += ["--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", f"melo={peer}"]
        with open(self.dir / "etcd.log", "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(client + "/health", timeout=1).json().get("health") == "true":
                    return
            except (httpx.HTTPError, ValueError):
                pass
            assert self.proc.poll() is None, (self.dir / "etcd.log").read_text()[-2000:]
            time.sleep(0.05)
        raise RuntimeError("etcd did not start: " + (self.dir / "etcd.log").read_text()[-2000:])

    def stop(self) -> None:
        """Stop it at once (kill -9), keeping its data."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
