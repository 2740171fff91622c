# The bot as a container: SQLite under /app/data by default; set DATABASE_URL for PostgreSQL.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app

COPY pyproject.toml README.md ./
COPY bot ./bot
COPY alembic.ini ./
# migrations ship inside the package (bot/store/migrations)
RUN pip install -e . && useradd --create-home --uid 10001 bot && mkdir -p /app/data && chown bot /app/data
USER bot
VOLUME ["/app/data"]

# SIGTERM lets in-flight work finish and releases job leases; give it time before a SIGKILL
STOPSIGNAL SIGTERM
CMD ["python", "-m", "bot"]
