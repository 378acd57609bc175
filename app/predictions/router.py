from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from app.core.errors import LADDER_ACCESS, InvalidInput, problems
from app.core.schemas import PlayerKey, SeatName
from app.http import ladder_access, offload, prediction_inputs
from app.http.deps import CallerDep, DatabaseDep
from app.predictions import service
from app.predictions.schemas import MatchIn, MatchPrediction, PairPrediction, TeamsIn, TeamsOut

router = APIRouter(prefix="/v1/ladders/{slug}/predict", tags=["predictions"], responses=LADDER_ACCESS)


@router.get("", response_model=PairPrediction, responses=problems(404, 422))
async def predict_pair(
    slug: str,
    db: DatabaseDep,
    caller: CallerDep,
    a: Annotated[PlayerKey, Query(description="Player key.")],
    b: Annotated[PlayerKey, Query(description="Opponent key.")],
    a_seat: Annotated[SeatName | None, Query(description="The seat a takes, one of the ladder's.")] = None,
    b_seat: Annotated[SeatName | None, Query(description="The seat b takes, one of the ladder's.")] = None,
) -> JSONResponse:
    """P(a beats b), and the advantage in logits and Elo points (with the seats' learned advantages, if given).
    A key that names no player yet stands for the initial vector they would start from (`a_known` or `b_known`
    false), so a newcomer can be matched before their first game."""
    ladder = await ladder_access.ladder(db, slug, caller)  # the plain case never gets here: app.predictions.fast_path
    seats = {name: seat for name, seat in (("a_seat", a_seat), ("b_seat", b_seat)) if seat is not None}
    if a_seat is not None and a_seat == b_seat:
        raise InvalidInput("b_seat: a seat is taken by one side only", errors=[{"field": "b_seat"}])
    learned = await prediction_inputs.seat_advantages(db, ladder, seats)
    shift = (learned.get(a_seat, 0.0) if a_seat else 0.0) - (learned.get(b_seat, 0.0) if b_seat else 0.0)
    return JSONResponse(service.pair(a, b, *await prediction_inputs.vectors(db, ladder, [a, b]), shift))


#: Matches of more players than this are computed and rendered in the compute thread (a 64-side matrix's JSON
#: alone is milliseconds of work).
LARGE_MATCH = 64


@router.post("", response_model=MatchPrediction, responses=problems(404, 422, 429, 503))
async def predict_match(slug: str, data: MatchIn, db: DatabaseDep, caller: CallerDep, request: Request) -> JSONResponse:
    """Win-probability matrix and expected scores for N sides (players or ad-hoc teams, with seat advantages), with
    the sides as given (who each row and column is). Keys that name no player yet stand for the initial vectors
    they would start from (`known` false). Large matches are computed in a thread beside the other requests, one
    at a time per worker; one that cannot start within the request deadline gets a 503."""
    ladder = await ladder_access.ladder(db, slug, caller)
    keys = service.match_keys(data)
    wanted = {f"sides[{n}].seat": side.seat for n, side in enumerate(data.sides) if side.seat is not None}
    learned = await prediction_inputs.seat_advantages(db, ladder, wanted)
    version, C, known, draw_share = await prediction_inputs.vectors(db, ladder, keys, request)

    def answer() -> JSONResponse:
        return JSONResponse(service.match(data, C, known, draw_share, learned) | {"ladder_version": version})

    return await offload.compute(request, answer) if len(keys) > LARGE_MATCH else answer()


teams_router = APIRouter(prefix="/v1/ladders/{slug}/teams", tags=["predictions"], responses=LADDER_ACCESS)


@teams_router.post("", response_model=TeamsOut, responses=problems(404, 422, 429, 503))
async def fair_teams(slug: str, data: TeamsIn, db: DatabaseDep, caller: CallerDep, request: Request) -> JSONResponse:
    """Split the players into teams whose match is closest to even (each team plays as its members' mean vector).

    Every split is scored up to 12 players (10 players into two teams: 126 splits); beyond, a local search from a
    snake draft by strength and random starts swaps players between teams while that evens the match, within a
    budget (500,000 scored splits or one second, whichever comes first): `exact` is false and the answer the best
    split it found. Searches run one at a time per worker, in a thread beside the other requests; one that
    cannot start within the request deadline gets a 503. Nothing is written."""
    ladder = await ladder_access.ladder(db, slug, caller)
    version, C, *_ = await prediction_inputs.vectors(db, ladder, service.team_keys(data), request)
    split = await offload.compute(request, service.fair_teams, data, C)
    return JSONResponse(split | {"ladder_version": version})
