from __future__ import annotations

from fastapi import APIRouter

from app.access import ladder_for_read
from app.deps import BearerKey, DatabaseDep, SettingsDep
from app.errors import Forbidden, problems
from app.ladders import service
from app.ladders.schemas import AuditOut, LadderCreate, LadderCreated, LadderOut
from app.security import hash_key, key_matches

router = APIRouter(prefix="/v1/ladders", tags=["ladders"])


@router.post("", status_code=201, response_model=LadderCreated, responses=problems(401, 403, 409, 422))
def create_ladder(data: LadderCreate, db: DatabaseDep, settings: SettingsDep, key: BearerKey) -> LadderCreated:
    """Create a ladder (admin key). The response carries the ladder's write key, shown only this once."""
    if settings.admin_key is None or not key_matches(key, hash_key(settings.admin_key)):
        raise Forbidden("Creating ladders needs the admin key (MELO_ADMIN_KEY).")
    with db.writing() as session:
        return service.create_ladder(session, data)


@router.get("", response_model=list[LadderOut])
def list_ladders(db: DatabaseDep) -> list[LadderOut]:
    """Every ladder, by name."""
    with db.reading() as session:
        return service.list_ladders(session)


@router.get("/{slug}", response_model=LadderOut, responses=problems(404))
def get_ladder(slug: str, db: DatabaseDep) -> LadderOut:
    """A ladder's configuration and size."""
    with db.reading() as session:
        return service.ladder_out(session, ladder_for_read(session, slug, fresh=True))


@router.get("/{slug}/audit", response_model=AuditOut, responses=problems(404))
def audit(slug: str, db: DatabaseDep) -> AuditOut:
    """Replay the event log from the latest checkpoint (or the initial vectors) and compare with the stored ratings."""
    with db.snapshot() as session:
        return service.audit(session, ladder_for_read(session, slug))
