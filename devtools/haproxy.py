"""HAProxy in front of two hosts of this service, as docs/operations.md runs it: round robin, a health check on
``/healthz``, failed connections retried on the other host; and where Debian's HAProxy binary is."""

import shutil
from pathlib import Path


def binary() -> str | None:
    """The HAProxy program (Debian installs it in /usr/sbin, not always on a user's PATH), or None."""
    return shutil.which("haproxy") or ("/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None)


HAPROXY = """global
    maxconn 4000
defaults
    mode http
    timeout connect 1s
    timeout client 30s
    timeout server 30s
    retries 3
    option redispatch
    retry-on conn-failure empty-response
frontend melo
    bind 127.0.0.1:{port}
    default_backend hosts
    http-response set-header X-Melo-Host %s
backend hosts
    balance roundrobin
    option httpchk GET /healthz
    server a 127.0.0.1:{a} check inter 200ms fall 2 rise 1
    server b 127.0.0.1:{b} check inter 200ms fall 2 rise 1
"""
