#!/bin/sh
# Installs the third-party MCP servers the e2e tests run against, pinned to
# exact versions, into <repo>/.cache/npm-servers (or $MCPFSM_NPM_SERVERS).
# Idempotent: a second run with the pinned versions already present does
# nothing. Requires node >= 20 and npm.
set -eu

EVERYTHING_VERSION=2026.8.31
FILESYSTEM_VERSION=2026.8.31

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${MCPFSM_NPM_SERVERS:-"$root/.cache/npm-servers"}
pkg="$dir/node_modules/@modelcontextprotocol/server-everything/package.json"
fspkg="$dir/node_modules/@modelcontextprotocol/server-filesystem/package.json"

check() { node "$root/.ci/npm-check.mjs" "$dir/node_modules"; }

if [ -f "$pkg" ] && grep -q "\"version\": \"$EVERYTHING_VERSION\"" "$pkg" &&
	[ -f "$fspkg" ] && grep -q "\"version\": \"$FILESYSTEM_VERSION\"" "$fspkg" && check; then
	echo "npm-servers: @modelcontextprotocol/server-everything@$EVERYTHING_VERSION and server-filesystem@$FILESYSTEM_VERSION already installed in $dir"
	exit 0
fi

mkdir -p "$dir"
# npm does not repair an install that lost files: start from nothing.
rm -rf "$dir/node_modules"
npm install --prefix "$dir" --no-audit --no-fund --save-exact \
	"@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" \
	"@modelcontextprotocol/server-filesystem@$FILESYSTEM_VERSION"
if ! check; then
	# A broken install: remove it, so that the caller's next try starts clean.
	rm -rf "$dir/node_modules"
	npm cache verify >/dev/null 2>&1 || true
	exit 1
fi
echo "npm-servers: installed @modelcontextprotocol/server-everything@$EVERYTHING_VERSION and server-filesystem@$FILESYSTEM_VERSION in $dir"
