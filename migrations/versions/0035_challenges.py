"""Challenges: ``challenges`` (a ladder's challenges between two players, numbered within the ladder, with their
answer and the game that settled them).

Revision ID: 0035
Revises: 0034
"""

import sqlalchemy as sa
from alembic import op

revision = "0035"
down_revision = "0034"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "challenges",
        sa.Column("ladder_id", BigId, nullable=False),
        sa.Column("number", sa.BigInteger(), nullable=False),
        sa.Column("from_player_id", sa.BigInteger(), nullable=False),
        sa.Column("to_player_id", sa.BigInteger(), nullable=False),
        sa.Column("message", sa.String(200), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("game", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(
            ["ladder_id"], ["ladders.id"], name=op.f("fk_challenges_ladder_id_ladders"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("ladder_id", "number", name=op.f("pk_challenges")),
    )
    op.create_index("ix_challenges_ladder_id_status", "challenges", ["ladder_id", "status"])


def downgrade() -> None:
    op.drop_table("challenges")
