"""Learned seats: a ladder may name seats whose advantages are learned from the results.

``ladders.seats`` lists the names and ``ladders.seat_state`` holds each seat's
advantage and information now; ``games.seat_state`` the state of a game's seats
just before it (replays after a void start there); ``checkpoints.seat_state``
what an applied refit set them to.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.add_column(sa.Column("seats", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("seat_state", sa.JSON(), nullable=True))
    with op.batch_alter_table("games") as batch_op:
        batch_op.add_column(sa.Column("seat_state", sa.JSON(), nullable=True))
    with op.batch_alter_table("checkpoints") as batch_op:
        batch_op.add_column(sa.Column("seat_state", sa.JSON(), nullable=True))


def downgrade() -> None:
    for table in ("checkpoints", "games", "ladders"):
        with op.batch_alter_table(table) as batch_op:
            batch_op.drop_column("seat_state")
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.drop_column("seats")
