"""Steps that follow what is known of a player: ``ladders.drift_steps`` (the online step is taken at a player's
experience, their games worn away by the ladder's drift while they were away) and ``players.experience`` (that
experience after their latest game).

Existing ladders keep the rule their ratings were computed with (``drift_steps`` false, each player's experience
their number of games); new ladders get the new rule.

Revision ID: 0027
Revises: 0026
"""

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.add_column(sa.Column("drift_steps", sa.Boolean(), nullable=False, server_default=sa.false()))
    with op.batch_alter_table("players") as batch_op:
        batch_op.add_column(sa.Column("experience", sa.Float(), nullable=False, server_default="0"))
    op.execute("UPDATE players SET experience = games")


def downgrade() -> None:
    with op.batch_alter_table("players") as batch_op:
        batch_op.drop_column("experience")
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.drop_column("drift_steps")
