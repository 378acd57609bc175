"""A refit keeps who its identifiability check does not place as two columns of sorted player ids
(``refits.not_comparable_ids``, ``refits.outside_field_ids``) instead of only in its JSON result.

What shows as provisional once a refit is applied was read from the result's lists of player keys: at a
million players a 150 MB JSON document, parsed while holding the interpreter (every look at the job, and each
worker's first read after an apply). The result now lists at most 100 players per list; this migration fills
the new columns of the refits already done from their results, by the players' keys as they are now (as the
lists were read before: a player renamed since the refit was shown as placed, and stays so until the next).

Revision ID: 0021
Revises: 0020
"""

import json

import numpy as np
import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("refits") as batch_op:
        batch_op.add_column(sa.Column("not_comparable_ids", sa.LargeBinary(), nullable=True))
        batch_op.add_column(sa.Column("outside_field_ids", sa.LargeBinary(), nullable=True))
    bind = op.get_bind()
    done = bind.execute(
        sa.text("SELECT id, ladder_id, result FROM refits WHERE status = 'done' AND result IS NOT NULL")
    )
    for refit_id, ladder_id, result in done.all():
        found = (json.loads(result) if isinstance(result, str) else result).get("identifiability") or {}
        components = found.get("components") or []
        field = max(components, key=len) if components else []
        outside = [key for group in components if group is not field for key in group]
        not_comparable = [row["key"] for row in found.get("not_comparable") or []]
        ids = _ids_of(bind, ladder_id)
        bind.execute(
            sa.text("UPDATE refits SET not_comparable_ids = :nc, outside_field_ids = :out WHERE id = :id"),
            {"nc": _packed(ids, not_comparable), "out": _packed(ids, outside), "id": refit_id},
        )


def _ids_of(bind, ladder_id: int) -> dict[str, int]:
    return dict(bind.execute(sa.text("SELECT key, id FROM players WHERE ladder_id = :l"), {"l": ladder_id}).all())


def _packed(ids: dict[str, int], keys: list[str]) -> bytes:
    found = sorted({ids[key] for key in keys if key in ids})
    return np.asarray(found, dtype="<i8").tobytes()


def downgrade() -> None:
    with op.batch_alter_table("refits") as batch_op:
        batch_op.drop_column("outside_field_ids")
        batch_op.drop_column("not_comparable_ids")
