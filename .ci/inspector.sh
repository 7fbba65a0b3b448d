#!/bin/sh
# Installs the MCP Inspector CLI, the third-party client the tests of
# 'mcpfsm serve' drive, pinned to an exact version, into
# <repo>/.cache/inspector (or $MCPFSM_INSPECTOR). It runs on Node 22:
# .ci/node22.sh installs that. Idempotent: a second run with the pinned
# version already present does nothing. Requires npm (any version).
set -eu

INSPECTOR_VERSION=2.12.0

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${MCPFSM_INSPECTOR:-"$root/.cache/inspector"}
pkg="$dir/node_modules/@modelcontextprotocol/inspector/package.json"

if [ -f "$pkg" ] && grep -q "\"version\": \"$INSPECTOR_VERSION\"" "$pkg"; then
	echo "inspector: @modelcontextprotocol/inspector@$INSPECTOR_VERSION already installed in $dir"
	exit 0
fi

mkdir -p "$dir"
npm install --prefix "$dir" --no-audit --no-fund --save-exact "@modelcontextprotocol/inspector@$INSPECTOR_VERSION"
echo "inspector: installed @modelcontextprotocol/inspector@$INSPECTOR_VERSION in $dir"
