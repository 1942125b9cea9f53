# slashgate: the package installed from this repository on a slim Python, run unprivileged.
# Build: docker build -t slashgate .   Run: docker compose up (see docs/operations.md).
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin slashgate

WORKDIR /src
COPY pyproject.toml README.md ./
COPY contract ./contract
COPY gateway ./gateway
COPY channels ./channels
RUN pip install . && rm -rf /src

USER slashgate
WORKDIR /home/slashgate
EXPOSE 8080
# Liveness: the process serves. Readiness (runtime, store, channels) is GET /readyz.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request as r; r.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('SLASHGATE_PORT', '8080'), timeout=3)"]
CMD ["slashgate", "serve", "--host", "0.0.0.0"]
