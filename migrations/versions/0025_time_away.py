"""Time in the ratings: ``ladders.drift`` (how far, in Elo points, a strength may wander in a year without games:
a player's standard error grows with the time since their last game) and ``ladders.inactive_after_days`` (players
who have not played for that long leave the default leaderboard until their next game; null: never).

Existing ladders get the default drift, 100 Elo points a year, and no inactivity by time, and a new version (their
standard errors change).

Revision ID: 0025
Revises: 0024
"""

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.add_column(sa.Column("drift", sa.Float(), nullable=False, server_default="100.0"))
        batch_op.add_column(sa.Column("inactive_after_days", sa.Integer(), nullable=True))
    # Every standard error changes with the drift: a new version, so no cached page or ETag outlives it.
    op.execute("UPDATE ladders SET version = version + 1, reset_version = version + 1")


def downgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.drop_column("inactive_after_days")
        batch_op.drop_column("drift")
