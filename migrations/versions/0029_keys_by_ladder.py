"""Keys by ladder, so PostgreSQL's tables can be distributed by ``ladder_id`` (Citus's co-located tables,
docs/operations.md): ``participants.ladder_id`` (its game's ladder); on PostgreSQL, every primary key of ladder data
includes ``ladder_id`` after the columns it had (lookups by id keep their index), and every foreign key between
those tables joins on it.

SQLite keeps its single-column integer keys: it counts ids up only for a lone ``INTEGER PRIMARY KEY``, and a
SQLite database is one file, never distributed.

It runs in one transaction that rewrites every membership and rebuilds nine keys, holding the tables: on
PostgreSQL here about 20 s per million memberships. Stop the servers while it runs.

Revision ID: 0029
Revises: 0028
"""

import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

#: Tables whose primary key was their own ``id``.
BY_ID = ("api_keys", "checkpoints", "games", "ladder_events", "players", "refits", "seasons")
#: Foreign keys between tables of ladder data: (table, columns, referred table, on delete), before and after.
FOREIGN = (
    ("participants", "game_id", "games", "CASCADE"),
    ("participants", "player_id", "players", "CASCADE"),
    ("player_aliases", "player_id", "players", "CASCADE"),
    ("checkpoints", "refit_id", "refits", "SET NULL (refit_id)"),
    ("season_standings", "season_id", "seasons", "CASCADE"),
)


def upgrade() -> None:
    with op.batch_alter_table("participants") as batch_op:
        batch_op.add_column(sa.Column("ladder_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite")))
    op.execute("UPDATE participants SET ladder_id = (SELECT ladder_id FROM games WHERE id = participants.game_id)")
    if op.get_bind().dialect.name != "postgresql":
        with op.batch_alter_table("participants") as batch_op:
            batch_op.alter_column("ladder_id", nullable=False)
        return
    op.alter_column("participants", "ladder_id", nullable=False)
    op.create_foreign_key(
        "fk_participants_ladder_id_ladders", "participants", "ladders", ["ladder_id"], ["id"], ondelete="CASCADE"
    )
    for table, column, referred, _ in FOREIGN:
        op.drop_constraint(f"fk_{table}_{column}_{referred}", table, type_="foreignkey")
    for table in BY_ID:
        op.drop_constraint(f"pk_{table}", table, type_="primary")
        op.create_primary_key(f"pk_{table}", table, ["id", "ladder_id"])
    op.drop_constraint("pk_participants", "participants", type_="primary")
    op.create_primary_key("pk_participants", "participants", ["game_id", "player_id", "ladder_id"])
    op.drop_constraint("pk_season_standings", "season_standings", type_="primary")
    op.create_primary_key("pk_season_standings", "season_standings", ["season_id", "rank", "ladder_id"])
    for table, column, referred, on_delete in FOREIGN:
        op.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT fk_{table}_{column}_{referred} FOREIGN KEY ({column}, ladder_id) "
            f"REFERENCES {referred} (id, ladder_id) ON DELETE {on_delete}"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table, column, referred, _ in FOREIGN:
            op.drop_constraint(f"fk_{table}_{column}_{referred}", table, type_="foreignkey")
        op.drop_constraint("pk_season_standings", "season_standings", type_="primary")
        op.create_primary_key("pk_season_standings", "season_standings", ["season_id", "rank"])
        op.drop_constraint("pk_participants", "participants", type_="primary")
        op.create_primary_key("pk_participants", "participants", ["game_id", "player_id"])
        for table in BY_ID:
            op.drop_constraint(f"pk_{table}", table, type_="primary")
            op.create_primary_key(f"pk_{table}", table, ["id"])
        for table, column, referred, on_delete in FOREIGN:
            op.execute(
                f"ALTER TABLE {table} ADD CONSTRAINT fk_{table}_{column}_{referred} FOREIGN KEY ({column}) "
                f"REFERENCES {referred} (id) ON DELETE {on_delete.split(' (')[0]}"
            )
        op.drop_constraint("fk_participants_ladder_id_ladders", "participants", type_="foreignkey")
    with op.batch_alter_table("participants") as batch_op:
        batch_op.drop_column("ladder_id")
