"""Where a webhook may send: https URLs of hosts whose every address is on the public internet (unless the server
allows http and private addresses, ``MELO_WEBHOOKS_ALLOW_PRIVATE``).

The host is resolved and every address checked when the webhook is made and again at each delivery, which then
connects to an address it checked: a name that resolves to a public address when it is checked and to a private one
when it is used (DNS rebinding) never reaches the private one.
"""

from __future__ import annotations

import ipaddress
import socket
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
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80), path


def refused_address(address: str) -> str | None:
    """Why the address may not be sent to (loopback, private, link-local, multicast, reserved), or None."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for name in ("loopback", "link_local", "multicast", "private", "reserved", "unspecified"):
        if getattr(ip, f"is_{name}"):
            return f"{address} is a {name.replace('_', '-')} address"
    if not ip.is_global:
        return f"{address} is not an address of the public internet"
    return None


def resolve(url: str, allow_private: bool) -> Target:
    """The URL checked and its host resolved, every address checked (blocking: call it in a thread);
    :class:`Refused` saying why it may not be sent to."""
    scheme, host, port, path = parse(url, allow_private)
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise Refused(f"its host {host!r} could not be resolved") from None
    addresses = tuple(dict.fromkeys(str(info[4][0]) for info in found))
    if not addresses:
        raise Refused(f"its host {host!r} has no address")
    if not allow_private:
        for address in addresses:
            if (why := refused_address(address)) is not None:
                raise Refused(f"its host {host!r} resolves to {why}, which webhooks may not reach")
    return Target(scheme, host, port, path, addresses)
