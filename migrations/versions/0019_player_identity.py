"""Player identity: a ladder may match player keys case-insensitively (new ladders do; existing ones keep exact
matching until an admin changes it), and a key can lead to another player (an alias: a merged player's key, a
changed key's old one).

Revision ID: 0019
Revises: 0018
"""

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.add_column(sa.Column("case_insensitive_keys", sa.Boolean(), nullable=False, server_default=sa.false()))
    big_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    op.create_table(
        "player_aliases",
        sa.Column("ladder_id", big_id, nullable=False),
        sa.Column("alias", sa.String(128), nullable=False),
        sa.Column("player_id", big_id, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["ladder_id"], ["ladders.id"], name="fk_player_aliases_ladder_id_ladders", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name="fk_player_aliases_player_id_players", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("ladder_id", "alias", name="pk_player_aliases"),
    )
    op.create_index("ix_player_aliases_player_id", "player_aliases", ["player_id"])


def downgrade() -> None:
    op.drop_index("ix_player_aliases_player_id", table_name="player_aliases")
    op.drop_table("player_aliases")
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.drop_column("case_insensitive_keys")
