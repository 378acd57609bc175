"""The variance rule (mathematics §3b): ``ladders.rate_rule``, ``ladders.noise`` and ``ladders.cycles``, each
player's ``variance``, each membership's ``variance_after``, and each checkpoint's ``variances``.

Existing ladders keep the shrinking-step rule their ratings were computed with (``rate_rule`` 'steps'); their
players' variances stay null until a rate choice puts the ladder on the variance rule (the log is then replayed
with it).

Revision ID: 0037
Revises: 0036
"""

import sqlalchemy as sa
from alembic import op

revision = "0037"
down_revision = "0036"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Native ADD COLUMN on both databases: nullable columns or constant defaults need no batch copy.
    op.add_column("ladders", sa.Column("rate_rule", sa.String(16), nullable=False, server_default="steps"))
    op.add_column("ladders", sa.Column("noise", sa.Float(), nullable=False, server_default="5.5"))
    op.add_column("ladders", sa.Column("cycles", sa.Float(), nullable=False, server_default="0.0"))
    op.add_column("players", sa.Column("variance", sa.Float(), nullable=True))
    op.add_column("participants", sa.Column("variance_after", sa.Float(), nullable=True))
    op.add_column("checkpoints", sa.Column("variances", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    for table, column in (
        ("checkpoints", "variances"),
        ("participants", "variance_after"),
        ("players", "variance"),
        ("ladders", "cycles"),
        ("ladders", "noise"),
        ("ladders", "rate_rule"),
    ):
        with op.batch_alter_table(table) as batch_op:
            batch_op.drop_column(column)
