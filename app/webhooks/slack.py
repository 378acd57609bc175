"""Slack's request signing, as Slack documents it (api.slack.com/authentication/verifying-requests-from-slack), and
what a slash command's text asks for.

A request is Slack's if ``X-Slack-Signature`` is ``v0=`` and the hex HMAC-SHA256, with the ladder's signing
secret, of ``v0:<X-Slack-Request-Timestamp>:<raw body>``, and the timestamp is within :data:`WINDOW` seconds of
now.  The same signature seen again within that window is a replay (:func:`app.storage.webhooks.first_sight`).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from dataclasses import dataclass
from urllib.parse import parse_qs

from app.core.errors import InvalidInput, Unauthorized

#: The most seconds a request's timestamp may be from now.
WINDOW = 300
#: Why a request is refused whose signature does not match (or whose ladder takes no slash commands: the same
#: answer, so that it tells an unsigned request nothing).
NOT_SIGNED = (
    "X-Slack-Signature does not match: the request was not signed with this ladder's Slack signing secret (a "
    "ladder admin sets it with PUT …/slack)."
)


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-Slack-Signature`` Slack sends with ``body`` at ``timestamp``."""
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def verify(secret: str, timestamp: str | None, signature: str | None, body: bytes, now: float | None = None) -> None:
    """401 unless the request is signed with ``secret`` at a timestamp within :data:`WINDOW` of now."""
    if not timestamp or not signature:
        raise Unauthorized(
            "This takes Slack's signed requests: X-Slack-Request-Timestamp and X-Slack-Signature are missing."
        )
    if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12):
        raise Unauthorized("X-Slack-Request-Timestamp must be a Unix time in seconds.")
    if abs((time.time() if now is None else now) - int(timestamp)) > WINDOW:
        raise Unauthorized(
            f"X-Slack-Request-Timestamp is more than {WINDOW // 60} minutes from this server's clock: a stale or "
            "replayed request (or a clock that is off)."
        )
    if not hmac.compare_digest(sign(secret, timestamp, body).encode(), signature.encode()):
        raise Unauthorized(NOT_SIGNED)


def form(body: bytes) -> dict[str, str]:
    """A slash command's fields (``command``, ``text``, ``user_id``, ``user_name``, …) from its form-encoded body."""
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except (UnicodeDecodeError, ValueError):
        raise InvalidInput("body: must be a form (application/x-www-form-urlencoded) in UTF-8") from None
    return {name: values[0] for name, values in fields.items()}


#: A Slack mention, as a command's text carries it with escaping on: ``<@U123>`` or ``<@U123|ada>``.  Only the
#: member id names anyone: the name after ``|`` is the one its member chose to be shown by, and may be anyone's.
_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|[^>]*)?>")
#: A score in ASCII digits: ``\d`` and ``int`` take any script's (``٢١-١٥``).
_SCORE = re.compile(r"([0-9]{1,4})\s*[-:–]\s*([0-9]{1,4})")
#: A digit of another script (what ``\d`` takes beyond 0-9): such a score gets its own answer.
_OTHER_DIGIT = re.compile(r"[^\D0-9]")
NOT_ASCII = "a score is written in the digits 0-9, such as 21-15."


@dataclass(frozen=True)
class Asked:
    """What a command's text asks: ``help``, ``top``, ``game`` (the opponent as typed, or their Slack member id if
    ``mentioned``, and the scores, the issuer's first) or ``unknown`` (with ``why`` when there is more to say)."""

    what: str
    opponent: str = ""
    mentioned: bool = False
    scores: tuple[int, int] | None = None
    why: str = ""


def asked(text: str) -> Asked:
    words = text.split()
    if not words or words[0].lower() in ("help", "?"):
        return Asked("help")
    if len(words) == 1 and words[0].lower() in ("top", "standings", "ladder"):
        return Asked("top")
    text = text.strip()
    mention = _MENTION.match(text)  # it ends at ``>``: a name shown may have spaces
    if mention is None and text.startswith("<@"):  # not a member id's form: never looked up as a key
        return Asked("unknown")
    said = text[mention.end() if mention else len(words[0]) :].strip()
    score = _SCORE.fullmatch(said)
    if score is None:
        return Asked("unknown", why=NOT_ASCII if _OTHER_DIGIT.search(said) else "")
    scores = (int(score.group(1)), int(score.group(2)))
    if mention is not None:
        return Asked("game", mention.group(1), True, scores)
    return Asked("game", words[0].removeprefix("@") or words[0], False, scores)
