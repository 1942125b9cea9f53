#!/usr/bin/env bash
# Installs the pinned pi coding agent (`pi --mode rpc`, used by the pi runtime and its tests)
# into .tools/pi (scripts/install-npm-tool.sh: idempotent, no global install, no install
# scripts; without node/npm or a registry it says why in .tools/pi/install-failed and the pi
# tests skip with that reason).
set -euo pipefail
exec bash "$(dirname "$0")/install-npm-tool.sh" pi "@mariozechner/pi-coding-agent" \
    "${PI_VERSION:-0.73.1}" "${PI_PREFIX:-.tools/pi}" pi
