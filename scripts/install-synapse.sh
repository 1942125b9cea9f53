#!/usr/bin/env bash
# Installs the pinned Synapse homeserver (`matrix-synapse` from PyPI, the Matrix tests' real
# server, on SQLite) into its own venv, .tools/synapse. Idempotent: does nothing when that
# version is already there (well under a second). Without a registry it says why in
# .tools/synapse-install-failed and exits 0: the Matrix tests then skip with that reason.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGE="matrix-synapse"
VERSION="${SYNAPSE_VERSION:-1.163.2}"
PREFIX="${SYNAPSE_PREFIX:-.tools/synapse}"
FAILED="$PREFIX-install-failed"

if [ -x "$PREFIX/bin/python" ] && [ -f "$PREFIX/.version" ] \
    && [ "$(cat "$PREFIX/.version")" = "$VERSION" ]; then
    echo "install-synapse: $PACKAGE==$VERSION already in $PREFIX"
    exit 0
fi

mkdir -p .tools
# Keep the installed tree out of git without touching the project's .gitignore.
[ -f .tools/.gitignore ] || printf '*\n' > .tools/.gitignore
rm -rf "$PREFIX" "$FAILED"
if ! python3 -m venv "$PREFIX" \
    || ! "$PREFIX/bin/pip" install --quiet --disable-pip-version-check \
        "$PACKAGE==$VERSION" >"$PREFIX.log" 2>&1 \
    || ! "$PREFIX/bin/python" -c 'import synapse.app.homeserver' >>"$PREFIX.log" 2>&1; then
    printf 'pip install %s==%s failed: %s\n' "$PACKAGE" "$VERSION" "$(tail -n 1 "$PREFIX.log")" > "$FAILED"
    rm -rf "$PREFIX"
    echo "install-synapse: $(cat "$FAILED") (the Matrix tests will skip)" >&2
    exit 0
fi
echo "$VERSION" > "$PREFIX/.version"
echo "install-synapse: installed $PACKAGE==$VERSION in $PREFIX"
