"""``ladder_events``: what changed in each ladder, in commit order, for the event stream (``GET …/events``).

Starts empty: a listener's stream begins when it connects.

Revision ID: 0023
Revises: 0022
"""

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Timestamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "ladder_events",
        sa.Column("id", BigId, nullable=False),
        sa.Column("ladder_id", BigId, nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.ForeignKeyConstraint(
            ["ladder_id"], ["ladders.id"], name=op.f("fk_ladder_events_ladder_id_ladders"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ladder_events")),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_ladder_events_ladder_id_id", "ladder_events", ["ladder_id", "id"])
    op.create_index("ix_ladder_events_created_at", "ladder_events", ["created_at"])


def downgrade() -> None:
    op.drop_table("ladder_events")
