"""Refit jobs and rating checkpoints (mathematics §9).

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Timestamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "refits",
        sa.Column("id", BigId, nullable=False),
        sa.Column("ladder_id", BigId, nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("progress", sa.Double(), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("error", sa.String(length=2000), nullable=True),
        sa.Column("after_game_id", sa.BigInteger(), nullable=True),
        sa.Column("player_ids", sa.LargeBinary(), nullable=True),
        sa.Column("vectors", sa.LargeBinary(), nullable=True),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("updated_at", Timestamp, nullable=False),
        sa.Column("finished_at", Timestamp, nullable=True),
        sa.Column("applied_at", Timestamp, nullable=True),
        sa.ForeignKeyConstraint(
            ["ladder_id"], ["ladders.id"], name=op.f("fk_refits_ladder_id_ladders"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_refits")),
    )
    op.create_index(op.f("ix_refits_ladder_id"), "refits", ["ladder_id"])
    op.create_table(
        "checkpoints",
        sa.Column("id", BigId, nullable=False),
        sa.Column("ladder_id", BigId, nullable=False),
        sa.Column("after_game_id", sa.BigInteger(), nullable=False),
        sa.Column("refit_id", BigId, nullable=True),
        sa.Column("player_ids", sa.LargeBinary(), nullable=False),
        sa.Column("vectors", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.ForeignKeyConstraint(
            ["ladder_id"], ["ladders.id"], name=op.f("fk_checkpoints_ladder_id_ladders"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["refit_id"], ["refits.id"], name=op.f("fk_checkpoints_refit_id_refits"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_checkpoints")),
    )
    op.create_index(op.f("ix_checkpoints_ladder_id"), "checkpoints", ["ladder_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_checkpoints_ladder_id"), table_name="checkpoints")
    op.drop_table("checkpoints")
    op.drop_index(op.f("ix_refits_ladder_id"), table_name="refits")
    op.drop_table("refits")
