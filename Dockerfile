# slashgate: the whole package (gateway, channels and the public API, slashgate.Bot) built as a
# wheel and installed on a slim Python, run unprivileged; no source tree is left in the image.
# Build: docker build -t slashgate .   Run: docker compose up.   Your own bot: an image FROM
# this one that copies its module and slashgate.toml (examples/mybot/; docs/deploy.md).
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
COPY slashgate ./slashgate
# With the Matrix channel's extra (mautrix, python-olm's manylinux wheel): Element's direct
# messages are encrypted, and a Matrix bot without it cannot read them.
RUN pip install --quiet ".[matrix]" && rm -rf /src

USER slashgate
WORKDIR /home/slashgate
# The settings: every one at its default (env SLASHGATE_* wins); an image FROM this one
# copies its own slashgate.toml over it.
COPY examples/slashgate.toml ./
# The data folder (data_dir), where the SQLite state is kept: made here, the gateway's user's
# alone, so that a volume mounted on it (docker run -v slashgate-data:/home/slashgate/.slashgate)
# starts with that owner and mode.
RUN mkdir -m 700 .slashgate
ENV SLASHGATE_CONFIG=slashgate.toml
EXPOSE 8080
# Liveness: the process serves. Readiness (runtime, store, channels) is GET /readyz.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request as r; r.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('SLASHGATE_PORT', '8080'), timeout=3)"]
# Every interface inside the container: compose.yaml publishes it on 127.0.0.1 unless told
# otherwise, and without a webhook token the gateway serves /v1 only where it is published on
# loopback (SLASHGATE_PUBLISHED_HOST; docs/deploy.md).
CMD ["slashgate", "serve", "--host", "0.0.0.0"]
