"""Seasons: ``seasons`` (a ladder's closed seasons: name, boundary in the log, when a later change reached their
games) and ``season_standings`` (each closed season's final standings as they stood, with the season's records).

Revision ID: 0026
Revises: 0025
"""

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "seasons",
        sa.Column("id", BigId, nullable=False),
        sa.Column("ladder_id", BigId, nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("after_game_id", sa.BigInteger(), nullable=False),
        sa.Column("after_seq", sa.BigInteger(), nullable=False),
        sa.Column("first_seq", sa.BigInteger(), nullable=True),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.Column("players", sa.Integer(), nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["ladder_id"], ["ladders.id"], name=op.f("fk_seasons_ladder_id_ladders"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_seasons")),
        sa.UniqueConstraint("ladder_id", "name", name=op.f("uq_seasons_ladder_id_name")),
    )
    op.create_table(
        "season_standings",
        sa.Column("ladder_id", BigId, nullable=False),
        sa.Column("season_id", BigId, nullable=False),
        sa.Column("rank", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(128), nullable=False),
        sa.Column("name", sa.String(200), nullable=True),
        sa.Column("elo", sa.Float(), nullable=False),
        sa.Column("strength_se", sa.Float(), nullable=False),
        sa.Column("conservative", sa.Float(), nullable=False),
        sa.Column("provisional", sa.Boolean(), nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.Column("wins", sa.Integer(), nullable=False),
        sa.Column("draws", sa.Integer(), nullable=False),
        sa.Column("losses", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["ladder_id"], ["ladders.id"], name=op.f("fk_season_standings_ladder_id_ladders"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["season_id"], ["seasons.id"], name=op.f("fk_season_standings_season_id_seasons"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("season_id", "rank", name=op.f("pk_season_standings")),
    )
    op.create_index("ix_season_standings_ladder_id", "season_standings", ["ladder_id"])


def downgrade() -> None:
    op.drop_table("season_standings")
    op.drop_table("seasons")
