"""A throwaway one-member etcd (Debian's ``etcd-server``) on loopback: the store a Patroni cluster elects its leader
in (devtools/patroni.py)."""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import httpx


def installed() -> bool:
    return shutil.which("etcd") is not None


def steady_port() -> int:
    """A free loopback port below the kernel's ephemeral range, for a server that is stopped and started again on
    it (etcd, a member's PostgreSQL): the ports other tests get from the kernel (bind to port 0) and the local
    ports of outgoing connections come from the ephemeral range, so none of them takes it meanwhile."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    for _ in range(200):
        port = random.randrange(10000, max(10001, low))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port below the ephemeral range")


class Etcd:
    """One etcd member on two steady loopback ports (:func:`steady_port`), its data in a temporary directory;
    stopped and started again on the same data (an outage of the store)."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="melo-etcd-"))
        self.port, self.peer_port = steady_port(), steady_port()
        self.proc: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        """``host:port`` of its client API (Patroni's ``etcd3.hosts``)."""
        return f"127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.dir / "etcd.log"

    def start(self, timeout: float = 30) -> None:
        """Start it (again, on its data and ports) and wait until it says it is healthy."""
        peer = f"http://127.0.0.1:{self.peer_port}"
        client = f"http://{self.address}"
        cmd = ["etcd", "--name", "melo", "--data-dir", str(self.dir / "data"), "--log-level", "error"]
        cmd += ["--listen-client-urls", client, "--advertise-client-urls", client]
        cmd += ["--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", f"melo={peer}"]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=log, cwd=self.dir)  # not the caller's directory
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if httpx.get(client + "/health", timeout=1).json().get("health") == "true":
                    return
            except (httpx.HTTPError, ValueError):
                pass
            assert self.proc.poll() is None, f"etcd exited: {self.tail()}"
            time.sleep(0.05)
        raise RuntimeError(f"etcd did not start: {self.tail()}")

    def tail(self, chars: int = 2000) -> str:
        """The end of its log."""
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def stop(self) -> None:
        """Stop it at once (kill -9), keeping its data."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def remove(self) -> None:
        """Stop it and delete its data."""
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
