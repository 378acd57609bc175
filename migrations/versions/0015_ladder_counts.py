"""Each ladder keeps its number of players and of games that count, so nothing on the write path counts rows.

``ladders.players_count`` and ``ladders.games_count`` (games not voided) are
changed by the transactions that add or remove players and games, in the
statement that bumps the ladder's version; ``/audit`` checks them against a
count of the rows.  This migration counts them once.

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.add_column(sa.Column("players_count", sa.BigInteger(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("games_count", sa.BigInteger(), nullable=False, server_default="0"))
    op.execute(
        "UPDATE ladders SET "
        "players_count = (SELECT COUNT(*) FROM players WHERE players.ladder_id = ladders.id), "
        "games_count = (SELECT COUNT(*) FROM games WHERE games.ladder_id = ladders.id AND games.voided_at IS NULL)"
    )


def downgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.drop_column("games_count")
        batch_op.drop_column("players_count")
