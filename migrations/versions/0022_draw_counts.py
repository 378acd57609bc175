"""Each ladder keeps what its draw model is fitted on: ``ladders.draws``, the two-sided games that counted and
were drawn, and ``ladders.draw_room``, the sum over its two-sided games that count of 2·min(p, 1 − p), p the
first side's expected score as stored (the largest chance of a draw that keeps the expected score p).

Filled here from the games already recorded.

Revision ID: 0022
Revises: 0021
"""

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

#: Per two-sided game that counts: was it drawn, and 2·min(p, 1 − p) of its first side's expected score p.
TWO_SIDED = """
SELECT g.ladder_id,
       sum(CASE WHEN s.actual = 0.5 THEN 1 ELSE 0 END),
       sum(CASE WHEN s.expected < 0.5 THEN 2 * s.expected ELSE 2 * (1 - s.expected) END)
FROM (SELECT game_id, max(side) AS sides, max(CASE WHEN side = 0 THEN actual_score END) AS actual,
             max(CASE WHEN side = 0 THEN expected_score END) AS expected
      FROM participants GROUP BY game_id) s
JOIN games g ON g.id = s.game_id
WHERE s.sides = 1 AND g.voided_at IS NULL
GROUP BY g.ladder_id
"""


def upgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.add_column(sa.Column("draws", sa.BigInteger(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("draw_room", sa.Float(), nullable=False, server_default="0"))
    bind = op.get_bind()
    for ladder_id, draws, room in bind.execute(sa.text(TWO_SIDED)).all():
        values = {"draws": int(draws or 0), "room": float(room or 0.0), "id": ladder_id}
        bind.execute(sa.text("UPDATE ladders SET draws = :draws, draw_room = :room WHERE id = :id"), values)


def downgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.drop_column("draw_room")
        batch_op.drop_column("draws")
