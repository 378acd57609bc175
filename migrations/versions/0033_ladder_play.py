"""The kinds of games a ladder plays: ``ladders.play``, {"singles", "doubles", "free_for_all", "draws": true or
false, "points": 11, 21 or null, "best_of": 1, 3 or 5}.  Every existing ladder plays everything, as before.

Revision ID: 0033
Revises: 0032
"""

import sqlalchemy as sa
from alembic import op

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None

#: What existing ladders play: everything, as before the setting.
EVERYTHING = {"singles": True, "doubles": True, "free_for_all": True, "draws": True, "points": None, "best_of": 1}


def upgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.add_column(sa.Column("play", sa.JSON(), nullable=True))
    op.execute(sa.table("ladders", sa.column("play", sa.JSON())).update().values(play=EVERYTHING))


def downgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.drop_column("play")
