from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from app.access import ladder_for_read
from app.deps import DatabaseDep
from app.errors import problems
from app.predictions import service
from app.predictions.schemas import MatchIn, MatchPrediction, PairPrediction
from app.schemas import PlayerKey

router = APIRouter(prefix="/v1/ladders/{slug}/predict", tags=["predictions"])


@router.get("", response_model=PairPrediction, responses=problems(404, 422))
def predict_pair(
    slug: str,
    db: DatabaseDep,
    a: Annotated[PlayerKey, Query(description="Player key.")],
    b: Annotated[PlayerKey, Query(description="Opponent key.")],
) -> JSONResponse:
    """P(a beats b), and the advantage in logits and Elo points."""
    with db.reading() as session:
        return JSONResponse(service.pair(session, ladder_for_read(session, slug), a, b))


@router.post("", response_model=MatchPrediction, responses=problems(404, 422))
def predict_match(slug: str, data: MatchIn, db: DatabaseDep) -> JSONResponse:
    """Win-probability matrix and expected scores for N sides (players or ad-hoc teams, with seat advantages)."""
    with db.reading() as session:
        return JSONResponse(service.match(session, ladder_for_read(session, slug), data))
