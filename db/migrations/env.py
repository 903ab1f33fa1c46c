"""Alembic environment. Run through db.migrate, which passes an open connection (and holds the lock
that makes concurrent upgrades safe); there is no offline (SQL script) mode."""
from alembic import context

from db.models import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations with `python -m db.migrate ...`: it opens the database and takes the lock")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters a table by copying it
    compare_type=True,
)
with context.begin_transaction():  # inside db.migrate's transaction: one commit for the whole upgrade
    context.run_migrations()
