"""A webhook receiver for tests: a threaded HTTP server on loopback that records every request it gets and answers
each as it is told (a status, or hanging for a while)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """What a receiver got, and how it answers: ``answers`` are taken in turn (a status, or ``("hang", seconds)``),
    then ``otherwise``."""

    url: str
    got: list[Received] = field(default_factory=list)
    answers: list = field(default_factory=list)
    otherwise: int | tuple[str, float] = 200
    changed: threading.Condition = field(default_factory=threading.Condition)

    def wait_for(self, n: int, seconds: float = 10.0) -> list[Received]:
        """The first ``n`` requests, once they have come (AssertionError after ``seconds``)."""
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.got) >= n, seconds), f"{len(self.got)} of {n} requests came"
            return self.got[:n]

    def quiet(self, seconds: float) -> int:
        """How many requests came, after waiting ``seconds`` for any more."""
        time.sleep(seconds)
        return len(self.got)


@contextmanager
def receiver(path: str = "/hook") -> Iterator[Receiver]:
    """A receiver on a free loopback port; yields it, with its URL."""
    state: Receiver

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with state.changed:
                answer = state.answers.pop(0) if state.answers else state.otherwise
                state.got.append(Received(self.path, dict(self.headers), body))
                state.changed.notify_all()
            if isinstance(answer, tuple):  # hang: answer nothing for that long
                time.sleep(answer[1])
                answer = 200
            try:
                self.send_response(answer)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
            except (BrokenPipeError, ConnectionResetError):  # the sender gave up waiting (its timeout): expected
                pass

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state = Receiver(f"http://127.0.0.1:{server.server_port}{path}")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
