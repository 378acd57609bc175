"""Hostile bursts for the liveness tests and bench/bench_burst.py: many requests sent at the same instant from
connections opened beforehand, and a probe in a process of its own timing one path meanwhile."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import socket
import time
from collections import Counter


def request(method: str, path: str, body: object = None) -> bytes:
    """One HTTP/1.1 request, its connection closed after the answer."""
    data = b"" if body is None else json.dumps(body).encode()
    head = f"{method} {path} HTTP/1.1\r\nHost: melo\r\nConnection: close\r\n"
    if data:
        head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
    return head.encode() + b"\r\n" + data


async def _one(port: int, payload: bytes, go: asyncio.Event) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    await go.wait()
    writer.write(payload)
    answer = await asyncio.wait_for(reader.read(), 120)  # until the server closes the connection
    writer.close()
    status = answer.split(b"\r\n", 1)[0].split()
    return int(status[1]) if len(status) > 1 else 0


async def _at_once(port: int, payloads: list[bytes]) -> tuple[Counter, float]:
    go = asyncio.Event()
    tasks = [asyncio.create_task(_one(port, payload, go)) for payload in payloads]
    await asyncio.sleep(0.5)  # every connection open first
    start = time.perf_counter()
    go.set()
    statuses = Counter(await asyncio.gather(*tasks))
    return statuses, time.perf_counter() - start


def at_once(port: int, payloads: list[bytes]) -> tuple[Counter, float]:
    """Send every payload at the same instant, each on a connection of its own: the statuses answered (0: none),
    and the seconds until the last answer."""
    return asyncio.run(_at_once(port, payloads))


def _receive(sock: socket.socket, data: bytes) -> bytes:
    chunk = sock.recv(65536)
    if not chunk:
        raise ConnectionError("the server closed the probe's connection")
    return data + chunk


def _probe(port: int, path: str, stop, out) -> None:
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    payload = f"GET {path} HTTP/1.1\r\nHost: melo\r\n\r\n".encode()
    seen = []
    try:
        while not stop.is_set():
            sent, start = time.time(), time.perf_counter()
            sock.sendall(payload)
            data = b""
            while b"\r\n\r\n" not in data:
                data = _receive(sock, data)
            head, _, body = data.partition(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            length = next(int(h.split(b":")[1]) for h in lines if h.lower().startswith(b"content-length"))
            while len(body) < length:
                body = _receive(sock, body)
            seen.append((sent, (time.perf_counter() - start) * 1000, int(head.split()[1])))
            time.sleep(0.01)
    finally:
        sock.close()
        out.put(seen)


class Probe:
    """``GET path`` every 10 ms on one keep-alive connection, from a process of its own (so the burst's client
    does not slow its timing), while the ``with`` block runs; ``during(windows)`` gives the milliseconds of the
    probes sent within those (start, end) wall-clock windows, and ``statuses`` every probe's status."""

    def __init__(self, port: int, path: str = "/healthz") -> None:
        self.stop, self.out = multiprocessing.Event(), multiprocessing.Queue()
        self.process = multiprocessing.Process(target=_probe, args=(port, path, self.stop, self.out), daemon=True)
        self.seen: list[tuple[float, float, int]] = []

    def __enter__(self) -> Probe:
        self.process.start()
        time.sleep(0.3)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.seen = self.out.get(timeout=60)
        self.process.join()

    @property
    def statuses(self) -> set[int]:
        return {status for *_, status in self.seen}

    def during(self, windows: list[tuple[float, float]]) -> list[float]:
        return sorted(ms for at, ms, _ in self.seen if any(a <= at <= b for a, b in windows))
