#!/usr/bin/env bash
# Installs the pinned fast-agent (`fast-agent acp`, a real ACP agent from PyPI that the ACP
# tests drive with its offline passthrough model) into a project-local venv. It needs
# Python 3.13: `python3.13` on PATH, or one under pyenv. Idempotent: does nothing when that
# version is already there. Without Python 3.13 it says so and exits 0 (the test then skips).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGE="fast-agent-mcp"
VERSION="${FAST_AGENT_VERSION:-0.10.46}"
PREFIX="${FAST_AGENT_PREFIX:-.tools/fast-agent}"

find_python() {
    local candidate
    for candidate in python3.13 "$(pyenv root 2>/dev/null)"/versions/3.13*/bin/python3.13 \
        "$HOME"/.pyenv/versions/3.13*/bin/python3.13; do
        if [ -n "$candidate" ] && "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 13)' \
            >/dev/null 2>&1; then
            command -v "$candidate"
            return 0
        fi
    done
    return 1
}

if [ -x "$PREFIX/bin/fast-agent" ] \
    && [ "$("$PREFIX/bin/python" -c "from importlib.metadata import version; print(version('$PACKAGE'))" 2>/dev/null)" = "$VERSION" ]; then
    echo "install-fast-agent: $PACKAGE==$VERSION already in $PREFIX"
    exit 0
fi

if ! python=$(find_python); then
    echo "install-fast-agent: no Python 3.13 found; skipping fast-agent (its test will skip)" >&2
    exit 0
fi

mkdir -p .tools
# Keep the installed tree out of git without touching the project's .gitignore.
[ -f .tools/.gitignore ] || printf '*\n' > .tools/.gitignore
rm -rf "$PREFIX"
"$python" -m venv "$PREFIX"
"$PREFIX/bin/pip" install --quiet --disable-pip-version-check "$PACKAGE==$VERSION" 2>&1 \
    | grep -v "is ignored: it is neither a file nor a directory" >&2 || true
"$PREFIX/bin/fast-agent" --version >/dev/null
echo "install-fast-agent: installed $PACKAGE==$VERSION in $PREFIX"
