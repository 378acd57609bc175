from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from app import reads
from app.deps import CallerDep, DatabaseDep
from app.errors import problems
from app.predictions import service
from app.predictions.schemas import MatchIn, MatchPrediction, PairPrediction
from app.schemas import PlayerKey

router = APIRouter(prefix="/v1/ladders/{slug}/predict", tags=["predictions"])


@router.get("", response_model=PairPrediction, responses=problems(404, 422))
async def predict_pair(
    slug: str,
    db: DatabaseDep,
    caller: CallerDep,
    a: Annotated[PlayerKey, Query(description="Player key.")],
    b: Annotated[PlayerKey, Query(description="Opponent key.")],
) -> JSONResponse:
    """P(a beats b), and the advantage in logits and Elo points."""
    ladder = await reads.ladder(db, slug, caller)
    return JSONResponse(service.pair(a, b, await reads.vectors(db, ladder, [a, b])))


@router.post("", response_model=MatchPrediction, responses=problems(404, 422))
async def predict_match(slug: str, data: MatchIn, db: DatabaseDep, caller: CallerDep) -> JSONResponse:
    """Win-probability matrix and expected scores for N sides (players or ad-hoc teams, with seat advantages)."""
    ladder = await reads.ladder(db, slug, caller)
    keys = service.match_keys(data)
    return JSONResponse(service.match(data, await reads.vectors(db, ladder, keys)))
