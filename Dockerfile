# melo: the rating service. Slim image, non-root user; SQLite in /app/data unless MELO_DATABASE_URL says otherwise.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    MELO_DATABASE_URL=sqlite:////app/data/melo.db \
    MELO_WORKERS=2

WORKDIR /app
# The locked dependencies first (a layer that changes only with requirements.lock), then the app without resolving.
COPY requirements.lock ./
RUN pip install -r requirements.lock
COPY pyproject.toml README.md alembic.ini ./
COPY app ./app
COPY migrations ./migrations
# Editable, so that the migrations stay next to the package that runs them.
RUN pip install --no-deps -e . \
 && useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin melo \
 && mkdir -p /app/data && chown melo /app/data && chmod 1777 /app/data

USER melo
VOLUME ["/app/data"]
EXPOSE 8000
# Healthy = ready to serve: the database answers (/readyz). An orchestrator's liveness probe uses /healthz,
# which answers whenever the process does and never waits for the database.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/readyz', timeout=2)"]
# Migrate, then serve: one process per worker, stateless, over one database.
CMD ["sh", "-c", "melo migrate && exec melo serve --host 0.0.0.0 --port 8000 --workers \"$MELO_WORKERS\""]
