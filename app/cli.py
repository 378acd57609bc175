"""The ``melo`` command line: serve, migrate, create-ladder, import."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from app.config import get_settings
from app.db import Database
from app.games.schemas import GameIn
from app.games.service import post_games
from app.ladders.schemas import LadderCreate
from app.ladders.service import create_ladder, get_ladder
from app.migrate import upgrade

CHESS_RESULT = {"1-0": (1, 2), "0-1": (2, 1), "1/2-1/2": (1, 1)}


def read_games(path: Path, fmt: str) -> list[dict]:
    """Games in the API's JSON shape from JSON lines or one of the sample formats in ../shared/data."""
    if fmt == "jsonl":
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
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


def progress(done: int, total: int, start: float, out=sys.stderr) -> None:
    width = 30
    filled = width * done // max(total, 1)
    rate = done / max(time.perf_counter() - start, 1e-9)
    out.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done:,}/{total:,} games  {rate:,.0f}/s")
    if done == total:
        out.write("\n")
    out.flush()


def chunks(items: list, size: int) -> Iterator[list]:
    for lo in range(0, len(items), size):
        yield items[lo : lo + size]


def cmd_import(args: argparse.Namespace) -> None:
    games = [GameIn.model_validate(g) for g in read_games(Path(args.file), args.format)]
    db = Database.from_settings(get_settings())
    start, done = time.perf_counter(), 0
    for part in chunks(games, args.batch):
        with db.writing() as session:
            ladder = get_ladder(session, args.ladder)
            post_games(session, ladder, part, None, "", batch=True)
        done += len(part)
        progress(done, len(games), start)
    print(f"imported {len(games):,} games into {args.ladder!r} in {time.perf_counter() - start:.1f} s")


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
    imp = sub.add_parser("import", help="import games into a ladder, in order")
    imp.add_argument("ladder")
    imp.add_argument("file")
    imp.add_argument("--format", choices=["jsonl", "chess", "football", "teams"], default="jsonl")
    imp.add_argument("--batch", type=int, default=1000, help="games per transaction")
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
