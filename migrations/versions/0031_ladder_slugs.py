"""Slugs in a table of their own: ``ladder_slugs`` (slug -> ladder id), a table of no ladder.

A slug is unique across ladders, which a table distributed by ladder cannot enforce (docs/operations.md §6): the
slugs move to a small table of their own, replicated to every node as a reference table, whose primary key keeps
them unique and which resolves a slug to its ladder's id.  On PostgreSQL ``ladders.slug`` keeps an ordinary index
(listings by slug) and loses its unique constraint; SQLite, never distributed, keeps it as well.

Revision ID: 0031
Revises: 0030
"""

import sqlalchemy as sa
from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ladder_slugs",
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("ladder_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.PrimaryKeyConstraint("slug", name=op.f("pk_ladder_slugs")),
    )
    op.execute("INSERT INTO ladder_slugs (slug, ladder_id) SELECT slug, id FROM ladders WHERE deleted_at IS NULL")
    if op.get_bind().dialect.name == "postgresql":
        op.drop_constraint("uq_ladders_slug", "ladders", type_="unique")
        op.create_index("ix_ladders_slug", "ladders", ["slug"])


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.drop_index("ix_ladders_slug", table_name="ladders")
        op.create_unique_constraint("uq_ladders_slug", "ladders", ["slug"])
    op.drop_table("ladder_slugs")
