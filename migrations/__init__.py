"""The job store's Alembic migrations, installed inside the package as `bot.migrations` (pyproject.toml maps it)."""
