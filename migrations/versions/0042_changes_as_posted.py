"""A game's rating change as its post answered it: ``participants.elo_change``, the Elo-equivalent points the game
gave or took from each member against the field as it was just after the game.  Read back everywhere a game is
shown, so that the change a player saw when they posted does not drift as the field moves.  A replay that changes
a game's vectors (a void before it, a merge, a new rate or k, a refit) sets it null: its change is then shown
against today's field, as every game's was before.  Existing games have none.

Revision ID: 0042
Revises: 0041
"""

import sqlalchemy as sa
from alembic import op

revision = "0042"
down_revision = "0041"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("participants", sa.Column("elo_change", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("participants") as batch_op:
        batch_op.drop_column("elo_change")
