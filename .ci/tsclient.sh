#!/bin/sh
# Installs the TypeScript MCP SDK, the third-party client library that
# e2e/tsclient_test.go drives 'mcpfsm serve' with, at the exact version
# that e2e/testdata/tsclient/package.json pins, into
# <repo>/.cache/tsclient (or $MCPFSM_TSCLIENT). The client runs on the
# Node 22 of .ci/node22.sh. Idempotent: a second run with the pinned
# version present and whole does nothing. Requires npm (any version).
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${MCPFSM_TSCLIENT:-"$root/.cache/tsclient"}
want="$root/e2e/testdata/tsclient/package.json"
version=$(sed -n 's/.*"@modelcontextprotocol\/sdk": *"\([^"]*\)".*/\1/p' "$want")
pkg="$dir/node_modules/@modelcontextprotocol/sdk/package.json"

check() { node "$root/.ci/npm-check.mjs" "$dir/node_modules"; }

if [ -f "$pkg" ] && grep -q "\"version\": \"$version\"" "$pkg" && cmp -s "$want" "$dir/package.json" && check; then
	echo "tsclient: @modelcontextprotocol/sdk@$version already installed in $dir"
	exit 0
fi

mkdir -p "$dir"
# npm does not repair an install that lost files: start from nothing.
rm -rf "$dir/node_modules" "$dir/package-lock.json"
cp "$want" "$dir/package.json"
npm install --prefix "$dir" --no-audit --no-fund
if ! check; then
	# A broken install: remove it, so that the caller's next try starts clean.
	rm -rf "$dir/node_modules"
	exit 1
fi
echo "tsclient: installed @modelcontextprotocol/sdk@$version in $dir"
