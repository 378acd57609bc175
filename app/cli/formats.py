"""The files ``melo import`` reads: games as JSON lines or in the chess, football and teams sample formats
(tests/data), and whether a file is a ladder export instead."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from app.games.schemas import GameIn

CHESS_RESULT = {"1-0": (1, 2), "0-1": (2, 1), "1/2-1/2": (1, 1)}


def read_json(path: Path) -> object:
    """A whole JSON file; one that is not JSON (bad syntax or UTF-8, nested too deep) stops the import with where."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SystemExit(f"{path}: {exc.strerror}; nothing was imported") from None
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}: not JSON ({exc.msg}, column {exc.colno})"
        raise SystemExit(f"{path}: {where}; nothing was imported") from None
    except ValueError as exc:  # not UTF-8, a number too long
        raise SystemExit(f"{path}: not JSON ({exc}); nothing was imported") from None
    except RecursionError:
        raise SystemExit(f"{path}: not JSON this import reads: nested too deep; nothing was imported") from None


def read_games(path: Path, fmt: str) -> list[dict]:
    """Games in the API's JSON shape from one of the sample formats in tests/data."""
    data = read_json(path)
    try:
        return _sample_games(data, fmt)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise SystemExit(
            f"{path}: not in the {fmt} format ({type(exc).__name__}: {exc}); nothing was imported"
        ) from None


def _sample_games(data, fmt: str) -> list[dict]:
    if fmt == "chess":  # [white, black, "1-0" | "0-1" | "1/2-1/2"]; white moves first
        return [
            {"sides": [{"players": [w], "rank": CHESS_RESULT[r][0]}, {"players": [b], "rank": CHESS_RESULT[r][1]}]}
            for w, b, r in data
        ]
    if fmt == "football":  # team1 plays at home
        return [
            {
                "sides": [
                    {"players": [m["team1"].replace("/", "-")], "score": m["score"]["ft"][0]},
                    {"players": [m["team2"].replace("/", "-")], "score": m["score"]["ft"][1]},
                ],
                "played_at": m["date"] + "T00:00:00Z",
            }
            for m in data["matches"]
            if "score" in m
        ]
    if fmt == "teams":  # free-for-all of ad-hoc teams; higher outcome = better finish
        return [
            {
                "sides": [
                    {"players": team, "score": score} for team, score in zip(g["players"], g["outcomes"], strict=True)
                ]
            }
            for g in data["interactions"]
        ]
    raise SystemExit(f"unknown format {fmt!r}")


def parse_games(path: Path, fmt: str, progress: Callable[[str, int, int], None]) -> list[GameIn]:
    """Validated games; the first invalid one stops the import with its line (or index) and field."""
    adapter = TypeAdapter(GameIn)
    items: list[bytes] | list[dict]  # the lines of a JSON-lines file, or the games read from a sample format
    if fmt == "jsonl":
        items, where = path.read_bytes().splitlines(), "line"
    else:
        items, where = read_games(path, fmt), "game"
    games = []
    for n, item in enumerate(items, start=1):
        if isinstance(item, bytes) and not item.strip():
            continue
        try:
            games.append(adapter.validate_json(item) if isinstance(item, bytes) else adapter.validate_python(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "game"
            raise SystemExit(f"{path}: {where} {n}: {field}: {first['msg']}; nothing was imported") from None
        if n % 10_000 == 0 or n == len(items):
            progress("reading", n, len(items))
    return games


def is_export(path: Path) -> bool:
    """Whether the file starts with the header line of a ladder export (a first line that is not JSON is left to
    the import of games, which names it)."""
    try:
        with path.open("rb") as lines:
            first = next((line for line in lines if line.strip()), b"")
    except OSError as exc:
        raise SystemExit(f"{path}: {exc.strerror}; nothing was imported") from None
    try:
        head = json.loads(first)
    except (ValueError, RecursionError):
        return False
    return isinstance(head, dict) and "melo_export" in head
