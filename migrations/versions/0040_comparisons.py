"""The comparisons (pairs of sides) of a ladder's games that count (``ladders.comparisons_count``), kept beside the
games, and those of its log when an auto refit started (``refits.log_comparisons``): the auto refits' schedule
counts comparisons, so a free-for-all of 27 players counts as the 351 pairs it compares.

Revision ID: 0040
Revises: 0039
"""

import sqlalchemy as sa
from alembic import op

revision = "0040"
down_revision = "0039"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("ladders", sa.Column("comparisons_count", sa.BigInteger(), nullable=False, server_default="0"))
    op.add_column("refits", sa.Column("log_comparisons", sa.BigInteger(), nullable=True))
    # Each game that counts compares its N sides pairwise: N(N - 1)/2 (its sides are its participants' sides).
    op.execute(
        "UPDATE ladders SET comparisons_count = (SELECT COALESCE(SUM(n * (n - 1) / 2), 0) FROM "
        "(SELECT COUNT(DISTINCT p.side) AS n FROM participants p JOIN games g ON g.id = p.game_id "
        "WHERE g.ladder_id = ladders.id AND p.ladder_id = g.ladder_id AND g.voided_at IS NULL "
        "GROUP BY p.game_id) AS sides)"
    )


def downgrade() -> None:
    with op.batch_alter_table("refits") as batch_op:
        batch_op.drop_column("log_comparisons")
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.drop_column("comparisons_count")
