"""Where a webhook may send: https URLs of hosts whose every address is on the public internet (unless the server
allows http and private addresses, ``MELO_WEBHOOKS_ALLOW_PRIVATE``).

The host is resolved and every address checked when the webhook is made and again at each delivery, which then
connects to an address it checked: a name that resolves to a public address when it is checked and to a private one
when it is used (DNS rebinding) never reaches the private one.

An address is public unless it lies in one of the ranges listed here: IANA's special-purpose address registries,
multicast and the reserved ranges, and for IPv6 all outside global unicast (2000::/3).  The list is explicit, not
``ipaddress``'s ``is_global``, which has changed between Python versions (3.11's takes 192.0.0.8 for global).
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

#: The longest URL a webhook may have.
MAX_URL = 2000
#: Why a host name may not be sent to, whatever the cause: it does not resolve (in time), or resolves to an address
#: webhooks may not reach.  One answer for both: an admin must not learn which internal names exist by asking.
NOT_PUBLIC = "its host could not be resolved to addresses of the public internet only, which webhooks need"
#: The same, on a server that allows private addresses (where no name's addresses are refused).
UNRESOLVED = "its host could not be resolved"


def _ranges(*ranges: tuple[str, str]) -> tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...]:
    return tuple((ipaddress.ip_network(network), kind) for network, kind in ranges)


#: The IPv4 ranges webhooks may not reach, and what each is: IANA's special-purpose registry (RFC 6890 and its
#: updates, the anycast services it calls globally reachable included: none is anyone's receiver), multicast and
#: 240/4.  The first that holds an address names it.
IPV4 = _ranges(
    ("0.0.0.0/8", "this-network"),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "shared (carrier-grade NAT)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "special-purpose"),  # IETF protocol assignments: DS-Lite, NAT64 discovery, PCP, TURN, …
    ("192.0.2.0/24", "documentation"),
    ("192.31.196.0/24", "special-purpose"),  # AS112
    ("192.52.193.0/24", "special-purpose"),  # AMT relays
    ("192.88.99.0/24", "special-purpose"),  # 6to4 relays, deprecated
    ("192.168.0.0/16", "private"),
    ("192.175.48.0/24", "special-purpose"),  # AS112
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("255.255.255.255/32", "broadcast"),
    ("240.0.0.0/4", "reserved"),
)
#: The IPv6 ranges webhooks may not reach: IANA's special-purpose registry (the IPv4-mapped and 6to4 ranges aside:
#: the IPv4 address they carry is checked), site-local and multicast; and all outside :data:`GLOBAL_UNICAST`.
IPV6 = _ranges(
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("64:ff9b::/96", "IPv4-translation"),  # NAT64: a translator may reach private IPv4 addresses
    ("64:ff9b:1::/48", "IPv4-translation"),
    ("100::/64", "discard-only"),
    ("2001::/23", "special-purpose"),  # IETF protocol assignments: Teredo, benchmarking, ORCHID, AMT, AS112, …
    ("2001:db8::/32", "documentation"),
    ("2620:4f:8000::/48", "special-purpose"),  # AS112
    ("3fff::/20", "documentation"),
    ("5f00::/16", "special-purpose"),  # SRv6 segment identifiers
    ("fc00::/7", "unique-local"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
)
GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")


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
    """Why the address may not be sent to (it lies in a range of :data:`IPV4` or :data:`IPV6`, outside IPv6's global
    unicast, or it is an IPv4-mapped or 6to4 address that carries such an IPv4 address), or None."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and (inner := ip.ipv4_mapped or ip.sixtofour) is not None:
        return None if (kind := _kind(inner)) is None else f"{address} carries {inner}, {_a(kind)} address"
    return None if (kind := _kind(ip)) is None else f"{address} is {_a(kind)} address"


def _kind(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """What kind of address not on the public internet ``ip`` is, or None."""
    for network, kind in IPV4 if ip.version == 4 else IPV6:
        if ip in network:
            return kind
    return "reserved" if ip.version == 6 and ip not in GLOBAL_UNICAST else None


def _a(kind: str) -> str:
    return ("an " if kind[0] in "aeiouAEIOU" else "a ") + kind


def _literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def resolve(url: str, allow_private: bool, seconds: float) -> Target:
    """The URL checked and its host resolved within ``seconds``, every address checked (blocking: call it in a
    thread); :class:`Refused` saying why it may not be sent to.

    A host name refused is told :data:`NOT_PUBLIC`, whatever the reason: neither whether the name exists nor what it
    resolves to (that would look up internal names for the asker); a refused address typed in the URL is named."""
    scheme, host, port, path = parse(url, allow_private)
    addresses = _lookup(host, port, seconds)
    refused = [] if allow_private else [why for address in addresses if (why := refused_address(address)) is not None]
    if refused and _literal(host):
        raise Refused(f"{refused[0]}, which webhooks may not reach")
    if refused or not addresses:
        raise Refused(UNRESOLVED if allow_private else NOT_PUBLIC)
    return Target(scheme, host, port, path, addresses)


def _lookup(host: str, port: int, seconds: float) -> tuple[str, ...]:
    """The host's addresses (``getaddrinfo``), none if it does not resolve within ``seconds`` (the system's resolver
    may take far longer: its thread is left to finish by itself, holding nothing)."""
    found: list = []

    def look() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except (OSError, UnicodeError):
            found.append([])

    thread = threading.Thread(target=look, name="melo-webhook-dns", daemon=True)
    thread.start()
    thread.join(seconds)
    return tuple(dict.fromkeys(str(info[4][0]) for info in found[0])) if found else ()
