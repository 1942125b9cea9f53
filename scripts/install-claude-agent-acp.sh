#!/usr/bin/env bash
# Installs the pinned claude-agent-acp (Zed's ACP adapter of Claude Code, with the Claude Agent
# SDK and its JavaScript CLI; no native binary) into .tools/claude-agent-acp. The ACP tests run
# it against a local mock of the Anthropic API (tests/acp/mock_anthropic.py), so nothing leaves
# the machine. Same rules as pi (scripts/install-npm-tool.sh): idempotent, no global install,
# no install scripts; without node/npm or a registry it says why in
# .tools/claude-agent-acp/install-failed and its tests skip with that reason.
set -euo pipefail
exec bash "$(dirname "$0")/install-npm-tool.sh" claude-agent-acp \
    "@zed-industries/claude-agent-acp" "${CLAUDE_AGENT_ACP_VERSION:-0.23.1}" \
    "${CLAUDE_AGENT_ACP_PREFIX:-.tools/claude-agent-acp}" claude-agent-acp
