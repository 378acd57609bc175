"""On SQLite, an index of each ladder's players in id order: reading a ladder's players in that order (a
worker's first load of its players, an export's pages) otherwise sorts them, or walks every player of the
ladder for each page of an export (97 ms a page at a million players, against 4 ms with it). PostgreSQL reads
them through the primary key, and an index there would cost every game's update of its players' rows.

Revision ID: 0020
Revises: 0019
"""

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.create_index("ix_players_ladder_id_id", "players", ["ladder_id", "id"])


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.drop_index("ix_players_ladder_id_id", table_name="players")
