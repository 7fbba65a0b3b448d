#!/bin/sh
# Installs the MCP conformance suite, pinned, into <repo>/.cache/conformance
# (or $MCPFSM_CONFORMANCE), with Node 22 from .ci/node22.sh to run it.
# Idempotent. Prints the path of the conformance command on stdout.
set -eu

CONFORMANCE_VERSION=0.2.0-alpha.12

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${MCPFSM_CONFORMANCE:-"$root/.cache/conformance"}
pkg="$dir/node_modules/@modelcontextprotocol/conformance/package.json"

sh "$root/.ci/node22.sh"
PATH="$(sh "$root/.ci/node22.sh" --bin):$PATH"
export PATH

if ! { [ -f "$pkg" ] && grep -q "\"version\": \"$CONFORMANCE_VERSION\"" "$pkg"; }; then
	mkdir -p "$dir"
	npm install --prefix "$dir" --no-audit --no-fund --save-exact \
		"@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" >&2
	echo "conformance: installed @modelcontextprotocol/conformance@$CONFORMANCE_VERSION in $dir" >&2
else
	echo "conformance: @modelcontextprotocol/conformance@$CONFORMANCE_VERSION already installed in $dir" >&2
fi
echo "$dir/node_modules/.bin/conformance"
