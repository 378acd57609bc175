"""The ``melo`` command line: serve, migrate, create-ladder, import."""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from pydantic import TypeAdapter, ValidationError

from app.config import get_settings
from app.db import Database
from app.games.schemas import GameIn
from app.games.service import import_games
from app.ladders.schemas import LadderCreate
from app.ladders.service import create_ladder, get_ladder
from app.migrate import upgrade

CHESS_RESULT = {"1-0": (1, 2), "0-1": (2, 1), "1/2-1/2": (1, 1)}


def read_games(path: Path, fmt: str) -> list[dict]:
    """Games in the API's JSON shape from one of the sample formats in ../shared/data."""
    data = json.loads(path.read_text())
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
    if fmt == "jsonl":
        items = path.read_bytes().splitlines()
        validate, where = adapter.validate_json, "line"
    else:
        items = read_games(path, fmt)
        validate, where = adapter.validate_python, "game"
    games = []
    for n, item in enumerate(items, start=1):
        if fmt == "jsonl" and not item.strip():
            continue
        try:
            games.append(validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "game"
            raise SystemExit(f"{path}: {where} {n}: {field}: {first['msg']}; nothing was imported") from None
        if n % 10_000 == 0 or n == len(items):
            progress("reading", n, len(items))
    return games


class ProgressBar:
    """One line per stage on stderr: a bar, counts and rate."""

    def __init__(self, out: TextIO = sys.stderr, width: int = 30) -> None:
        self.out, self.width = out, width
        self.stage, self.start = "", 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self.stage:
            self.stage, self.start = stage, time.perf_counter()
        filled = self.width * done // max(total, 1)
        rate = done / max(time.perf_counter() - self.start, 1e-9)
        bar = "#" * filled + "." * (self.width - filled)
        self.out.write(f"\r{stage:<8} [{bar}] {done:,}/{total:,}  {rate:,.0f}/s")
        if done >= total:
            self.out.write("\n")
        self.out.flush()


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Millions of small, long-lived objects make the cyclic collector rescan them again and
    again (it doubled the import time); they hold no cycles, so it can pause."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def cmd_import(args: argparse.Namespace) -> None:
    start = time.perf_counter()
    progress = ProgressBar()
    with no_cyclic_gc():
        games = parse_games(Path(args.file), args.format, progress)
        db = Database.from_settings(get_settings())
        with db.writing() as session:
            ladder = get_ladder(session, args.ladder)
            import_games(session, ladder, games, progress)
        db.dispose()
    seconds = time.perf_counter() - start
    print(
        f"imported {len(games):,} games into {args.ladder!r} in {seconds:.1f} s ({len(games) / seconds:,.0f} games/s)"
    )


def cmd_create_ladder(args: argparse.Namespace) -> None:
    data = LadderCreate(slug=args.slug, k=args.k, eta=args.eta, auto_create_players=True)
    db = Database.from_settings(get_settings())
    with db.writing() as session:
        created = create_ladder(session, data)
    print(json.dumps(created.model_dump(mode="json"), indent=2))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="melo", description="mElo rating service")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the HTTP server")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=1)
    sub.add_parser("migrate", help="bring the database schema up to date")
    create = sub.add_parser("create-ladder", help="create a ladder and print its write key")
    create.add_argument("slug")
    create.add_argument("--k", type=int, default=1)
    create.add_argument("--eta", type=float, default=0.1)
    imp = sub.add_parser("import", help="import games into a ladder, in order, all or nothing")
    imp.add_argument("ladder")
    imp.add_argument("file")
    imp.add_argument("--format", choices=["jsonl", "chess", "football", "teams"], default="jsonl")
    args = parser.parse_args(argv)

    settings = get_settings()
    if args.command == "serve":
        import uvicorn

        uvicorn.run("app.main:app", host=args.host, port=args.port, workers=args.workers)
        return
    upgrade(settings.sqlalchemy_url)
    if args.command == "create-ladder":
        cmd_create_ladder(args)
    elif args.command == "import":
        cmd_import(args)


if __name__ == "__main__":
    main()
