#!/usr/bin/env bash
# Installs a pinned npm package into a project-local directory:
#   install-npm-tool.sh NAME PACKAGE VERSION PREFIX BIN
# (BIN: the program it puts in PREFIX/node_modules/.bin). Idempotent: does nothing when that
# version is already there. No global install; install scripts are skipped, so nothing is
# downloaded besides registry packages. The tool is optional: without node/npm, or when npm
# fails (no registry), it says why, writes that reason to PREFIX/install-failed and exits 0;
# the tool's tests then skip with it.
set -euo pipefail
cd "$(dirname "$0")/.."

NAME="$1" PACKAGE="$2" VERSION="$3" PREFIX="$4" BIN="$5"
FAILED="$PREFIX/install-failed"

mkdir -p "$PREFIX" .tools
# Keep the installed tree out of git without touching the project's .gitignore.
[ -f .tools/.gitignore ] || printf '*\n' > .tools/.gitignore

skip() {
    echo "install-$NAME: $1; skipping $NAME (its tests will skip)" >&2
    echo "$1" > "$FAILED"
    exit 0
}

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    skip "node/npm not found"
fi

manifest="$PREFIX/node_modules/$PACKAGE/package.json"
if [ -f "$manifest" ] && [ -x "$PREFIX/node_modules/.bin/$BIN" ] \
    && node -e 'process.exit(require(process.argv[1]).version === process.argv[2] ? 0 : 1)' \
        "$(pwd)/$manifest" "$VERSION"; then
    rm -f "$FAILED"
    echo "install-$NAME: $PACKAGE@$VERSION already in $PREFIX"
    exit 0
fi

npm install --prefix "$PREFIX" --no-audit --no-fund --ignore-scripts --loglevel=error \
    "$PACKAGE@$VERSION" || skip "npm install $PACKAGE@$VERSION failed (is the npm registry reachable?)"
rm -f "$FAILED"
echo "install-$NAME: installed $PACKAGE@$VERSION in $PREFIX"
