#!/bin/sh
# Installs the third-party MCP servers the e2e tests run against, pinned to
# exact versions, into <repo>/.cache/npm-servers (or $MCPFSM_NPM_SERVERS).
# Idempotent: a second run with the pinned versions already present does
# nothing. Requires node >= 20 and npm.
set -eu

EVERYTHING_VERSION=2026.8.31

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${MCPFSM_NPM_SERVERS:-"$root/.cache/npm-servers"}
pkg="$dir/node_modules/@modelcontextprotocol/server-everything/package.json"

if [ -f "$pkg" ] && grep -q "\"version\": \"$EVERYTHING_VERSION\"" "$pkg"; then
	echo "npm-servers: @modelcontextprotocol/server-everything@$EVERYTHING_VERSION already installed in $dir"
	exit 0
fi

mkdir -p "$dir"
npm install --prefix "$dir" --no-audit --no-fund --save-exact \
	"@modelcontextprotocol/server-everything@$EVERYTHING_VERSION"
echo "npm-servers: installed @modelcontextprotocol/server-everything@$EVERYTHING_VERSION in $dir"
