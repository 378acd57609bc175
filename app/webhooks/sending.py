"""One delivery attempt: the body POSTed to a checked address of the webhook's host, signed, within a deadline,
reading back no more than a little of the answer (standard library only: it runs in a dispatcher thread).

The deadline bounds the whole attempt, however the receiver trickles its answer: the host's lookup is given up on
at it, and a watchdog shuts the connection down at it (a socket's own timeout only bounds each read).

The signature is ``Melo-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" with the webhook's
secret>``: the receiver recomputes it, and refuses a ``t`` far from its clock (a replay).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import http.client
import socket
import ssl
import threading
import time
from dataclasses import dataclass

from app.webhooks.addresses import Refused, Target, resolve

USER_AGENT = "melo-webhooks/1"
#: The most of a receiver's answer read back (bytes): only its status counts, and a line of its text is logged.
MAX_ANSWER = 16 * 1024


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The ``Melo-Signature`` header's value for ``body`` sent at ``timestamp``."""
    signed = str(timestamp).encode() + b"." + body
    return f"t={timestamp},v1={hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()}"


@dataclass(frozen=True)
class Outcome:
    """How an attempt went: delivered (a 2xx answer), the answer's status code (None: none came), and what went
    wrong, in words."""

    delivered: bool
    code: int | None = None
    error: str | None = None


class _Watchdog:
    """Shuts an attempt's connection down at its deadline, from a timer thread: the TLS handshake and every read
    then end at once.  It holds a duplicate of the socket's descriptor, which TLS wrapping leaves alone."""

    def __init__(self, deadline: float) -> None:
        self.lock = threading.Lock()
        self.sock: socket.socket | None = None
        self.fired = False
        self.timer = threading.Timer(max(deadline - time.monotonic(), 0.0), self._cut)
        self.timer.daemon = True
        self.timer.start()

    def watch(self, sock: socket.socket) -> None:
        with self.lock:
            self.sock = sock.dup()
        if self.fired:
            self._cut()

    def _cut(self) -> None:
        with self.lock:
            self.fired = True
            if self.sock is not None:
                with contextlib.suppress(OSError):  # closed already
                    self.sock.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        self.timer.cancel()
        with self.lock:
            if self.sock is not None:
                self.sock.close()
                self.sock = None


def send(url: str, body: bytes, secret: str, timeout: float, allow_private: bool) -> Outcome:
    """POST ``body`` to the webhook's URL, its host resolved and checked again now, all within ``timeout``; never
    raises."""
    outcome = _attempt(url, body, secret, timeout, allow_private)
    if outcome.error is not None:  # a receiver's bytes (NUL, escapes, line breaks) reach logs and the database
        outcome = Outcome(outcome.delivered, outcome.code, printable(outcome.error))
    return outcome


def printable(text: str) -> str:
    """``text`` with every character that is not printable (control characters, NUL, escapes) as a space."""
    return "".join(ch if ch.isprintable() else " " for ch in text)


def _attempt(url: str, body: bytes, secret: str, timeout: float, allow_private: bool) -> Outcome:
    deadline = time.monotonic() + timeout
    try:
        target = resolve(url, allow_private, timeout)
    except Refused as exc:
        return Outcome(False, None, f"not sent: the URL {exc}")
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Melo-Signature": signature(secret, int(time.time()), body),
    }
    watchdog = _Watchdog(deadline)
    try:
        return _post(target, body, headers, deadline, watchdog)
    except TimeoutError:
        return Outcome(False, None, f"no answer within {timeout:g} s")
    except Exception as exc:  # OSError, HTTPException, and whatever else: an attempt never raises
        if watchdog.fired:
            return Outcome(False, None, f"no answer within {timeout:g} s")
        return Outcome(False, None, f"{type(exc).__name__}: {exc}"[:300])
    finally:
        watchdog.cancel()


def _post(target: Target, body: bytes, headers: dict[str, str], deadline: float, watchdog: _Watchdog) -> Outcome:
    connection = _connection(target, deadline, watchdog)
    sock = connection.sock  # the connection lets go of it once an answer says it closes: the answer reads on
    try:
        connection.request("POST", target.path, body=body, headers=headers)
        sock.settimeout(_left(deadline))
        answer = connection.getresponse()
        text = b""
        while len(text) < MAX_ANSWER:  # a receiver that trickles its answer is still held to the deadline
            sock.settimeout(_left(deadline))
            chunk = answer.read1(MAX_ANSWER - len(text))
            if not chunk:
                break
            text += chunk
        if watchdog.fired:
            raise TimeoutError
        if 200 <= answer.status < 300:
            return Outcome(True, answer.status)
        said = printable(text.decode("utf-8", "replace")).strip()[:200]
        return Outcome(False, answer.status, f"answered {answer.status}" + (f": {said}" if said else ""))
    finally:
        connection.close()


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def _connection(target: Target, deadline: float, watchdog: _Watchdog) -> http.client.HTTPConnection:
    """A connection to the first of the target's checked addresses that answers (never to another the name may
    resolve to by now), with the host's name in the request and, over https, in the TLS handshake."""
    error: OSError = OSError(f"no address of {target.host} answered")
    for address in target.addresses:
        try:
            sock = socket.create_connection((address, target.port), timeout=_left(deadline))
        except TimeoutError:
            raise
        except OSError as exc:
            error = exc
            continue
        watchdog.watch(sock)
        if target.scheme == "https":
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=target.host)
        cls = http.client.HTTPSConnection if target.scheme == "https" else http.client.HTTPConnection
        connection = cls(target.host, target.port, timeout=_left(deadline))
        connection.sock = sock
        return connection
    raise error
