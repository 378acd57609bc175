"""Where a webhook may send: https URLs of hosts whose every address is on the public internet (unless the server
allows http and private addresses, ``MELO_WEBHOOKS_ALLOW_PRIVATE``).

The host is resolved and every address checked when the webhook is made and again at each delivery, which then
connects to an address it checked: a name that resolves to a public address when it is checked and to a private one
when it is used (DNS rebinding) never reaches the private one.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

#: The longest URL a webhook may have.
MAX_URL = 2000


class Refused(ValueError):
    """The URL may not be sent to; the message says why, in words for the user."""


@dataclass(frozen=True)
class Target:
    """A checked URL: its scheme, host, port, the path and query to request, and the addresses it may connect to."""

    scheme: str
    host: str
    port: int
    path: str
    addresses: tuple[str, ...]


def parse(url: str, allow_private: bool) -> tuple[str, str, int, str]:
    """(scheme, host, port, path with query) of a URL a webhook may take; :class:`Refused` otherwise."""
    if len(url) > MAX_URL:
        raise Refused(f"must be at most {MAX_URL} characters")
    if not url.isprintable() or any(ch.isspace() for ch in url):
        raise Refused("must have no spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise Refused(f"is not a URL ({exc})") from None
    schemes = ("https", "http") if allow_private else ("https",)
    if parts.scheme not in schemes:
        raise Refused("must start with https:// (this server sends webhooks over https only)")
    if not parts.hostname:
        raise Refused("must name a host, e.g. https://hooks.slack.com/services/…")
    if parts.username is not None or parts.password is not None:
        raise Refused("must not hold a user name or password (put a token in the path or query instead)")
    if port == 0:
        raise Refused("must not name port 0")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if not path.isascii():  # an HTTP request line is ASCII: the sender could not write it
        raise Refused("must have an ASCII path and query: percent-encode other characters (é as %C3%A9)")
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80), path


def refused_address(address: str) -> str | None:
    """Why the address may not be sent to (loopback, private, link-local, site-local, multicast, reserved, or an
    IPv6 address that carries such an IPv4 address: mapped, 6to4, Teredo), or None."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        for inner in (ip.ipv4_mapped, ip.sixtofour, ip.teredo[1] if ip.teredo else None):
            if inner is not None and (kind := _kind(inner)) is not None:
                return f"{address} carries {inner}, a {kind} address"
    return None if (kind := _kind(ip)) is None else f"{address} is a {kind} address"


def _kind(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """What kind of address not on the public internet ``ip`` is, or None."""
    for name in ("loopback", "link_local", "site_local", "multicast", "private", "reserved", "unspecified"):
        if getattr(ip, f"is_{name}", False):
            return name.replace("_", "-")
    return None if ip.is_global else "non-public"


def _literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def resolve(url: str, allow_private: bool, seconds: float) -> Target:
    """The URL checked and its host resolved within ``seconds``, every address checked (blocking: call it in a
    thread); :class:`Refused` saying why it may not be sent to.

    A refused name is not told what it resolves to (that would look up internal names for the asker); a refused
    address typed in the URL is named."""
    scheme, host, port, path = parse(url, allow_private)
    found = _lookup(host, port, seconds)
    addresses = tuple(dict.fromkeys(str(info[4][0]) for info in found))
    if not addresses:
        raise Refused(f"its host {host!r} has no address")
    if not allow_private:
        for address in addresses:
            if (why := refused_address(address)) is None:
                continue
            if _literal(host):
                raise Refused(f"{why}, which webhooks may not reach")
            raise Refused(f"its host {host!r} resolves to a non-public address, which webhooks may not reach")
    return Target(scheme, host, port, path, addresses)


def _lookup(host: str, port: int, seconds: float) -> list:
    """``getaddrinfo`` of the host, given up on after ``seconds`` (the system's resolver may take far longer: its
    thread is left to finish by itself, holding nothing)."""
    found: list = []

    def look() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except (OSError, UnicodeError):
            found.append(None)

    thread = threading.Thread(target=look, name="melo-webhook-dns", daemon=True)
    thread.start()
    thread.join(seconds)
    if not found:
        raise Refused(f"its host {host!r} could not be resolved within {seconds:g} s")
    if found[0] is None:
        raise Refused(f"its host {host!r} could not be resolved")
    return found[0]
