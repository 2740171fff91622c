# The bot as a container: SQLite under /app/data by default; set DATABASE_URL for PostgreSQL.
#
#   docker build -t aiart-bot .
#   cp .env.example .env     # then fill in TELEGRAM_BOT_TOKEN (and AIART_API_KEY, BOT_ALLOWED_USERS)
#   docker run -d --name aiart-bot --env-file .env -v aiart-data:/app/data aiart-bot
#   docker run --rm --env-file .env aiart-bot aiart-bot migrate   # migrations alone, then exit
#
# Stopping: SIGTERM gives in-flight handlers and worker steps 15 s (SHUTDOWN_GRACE_S in bot/runtime.py),
# then releases job leases and exits 0. Docker's default of 10 s before SIGKILL is shorter, so stop it with
# `docker stop -t 20 <container>`, or in compose set `stop_grace_period: 20s`.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
LABEL org.opencontainers.image.title="aiart-bot" \
      org.opencontainers.image.description="A Telegram bot for an asynchronous AI image service"

# The dependencies at the exact versions of requirements.lock, in a layer of their own (it changes rarely).
# Regenerate the lock with Python 3.11 (this image's) after changing pyproject.toml's dependencies:
#   pip install pip-tools && pip-compile --strip-extras --no-emit-index-url --no-emit-find-links \
#       --no-emit-trusted-host --output-file requirements.lock pyproject.toml
COPY requirements.lock /tmp/build/
RUN pip install -r /tmp/build/requirements.lock

# The bot itself, installed as a wheel would be (not editable): the migrations ship inside the package.
COPY pyproject.toml README.md /tmp/build/
COPY bot /tmp/build/bot
COPY migrations /tmp/build/migrations
RUN pip install --no-deps /tmp/build && pip check && rm -rf /tmp/build \
    && useradd --create-home --uid 10001 bot && mkdir -p /app/data && chown bot /app/data

WORKDIR /app
USER bot
VOLUME ["/app/data"]

# The bot's one HTTP server (bot/http/: /healthz, /readyz, /metrics, webhooks, signed media links). Outside a
# container it listens on loopback by default; in one it must listen on all interfaces to be reachable through
# a published port. Publish it only as far as needed: `-p 127.0.0.1:8081:8081`, or a reverse proxy's network.
ENV HTTP_HOST=0.0.0.0 HTTP_PORT=8081
EXPOSE 8081
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8081/readyz', timeout=4)"

# SIGTERM lets in-flight work finish (15 s) and releases job leases; see `docker stop -t 20` above
STOPSIGNAL SIGTERM
CMD ["aiart-bot"]
