#!/usr/bin/env bash
# Runs every server scenario of the MCP conformance suite against
# (a) go-sdk's conformance everything-server alone, over stateful
# Streamable HTTP (a stateless one cannot send requests to its clients),
# and 'mcpfsm serve -names raw -listen' with that server as its one
# stdio backend, (b) isolated per client (the default) and (c) shared by
# every client, and prints a Markdown table of the outcomes. Every
# fourth scenario, serve's backends are SIGKILLed first, and the next
# scenario waits until serve's /readyz says they are back. It exits
# non-zero when (b) or (c) passes fewer scenarios than (a): through serve
# a client must be able to do what it does against the server directly;
# and, so that a broken runner, an empty scenario list or a changed
# result line (every scenario failing every way) cannot pass, when the
# list is empty or (b) or (c) passes fewer than MIN scenarios.
# Usage: conformance-server.sh [SCENARIO...] (default: every server
# scenario). MIN is $CONFORMANCE_SERVER_MIN, by default 32 for every
# scenario and 1 for a named list. The suite is installed by
# .ci/conformance.sh.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
conformance=$(sh "$root/.ci/conformance.sh")
PATH="$(sh "$root/.ci/node22.sh" --bin):$PATH"
export PATH

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

(cd "$root" && go build -o "$work/everything" github.com/modelcontextprotocol/go-sdk/conformance/everything-server)
(cd "$root" && go build -o "$work/mcpfsm" ./cmd/mcpfsm)

# freeport prints a TCP port of 127.0.0.1 that nothing listens on, below
# the range the kernel hands out to outgoing connections (32768 on).
freeport() {
	local p
	for p in $(seq $((10000 + $$ % 20000)) 32000); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	echo "conformance-server: no free port" >&2
	exit 1
}

# ready waits (at most 30s) until something listens on port $1.
ready() {
	local i
	for i in $(seq 1 300); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	echo "conformance-server: nothing listens on port $1 after 30s; its log:" >&2
	cat "$2" >&2
	exit 1
}

direct_port=$(freeport)
"$work/everything" -http "127.0.0.1:$direct_port" -stateless=false >"$work/direct.log" 2>&1 &
pids+=($!)
ready "$direct_port" "$work/direct.log"

# serve_mode starts serve with the everything-server isolated as $1 on a
# port the kernel picks (a port found free and bound later can be taken
# meanwhile), and sets serve_port and serve_pid from the URL it logs.
serve_mode() {
	local log="$work/serve-$1.log" i
	printf '{"mcpServers": {"everything": {"command": "%s", "isolation": "%s"}}}\n' "$work/everything" "$1" >"$work/servers-$1.json"
	"$work/mcpfsm" serve -config "$work/servers-$1.json" -names raw -listen 127.0.0.1:0 -unauthenticated >"$log" 2>&1 &
	serve_pid=$!
	pids+=($serve_pid)
	serve_port=
	for i in $(seq 1 300); do
		serve_port=$(sed -n 's|.*serving MCP over Streamable HTTP at http://127\.0\.0\.1:\([0-9]*\)/mcp.*|\1|p' "$log" | head -1)
		[ -n "$serve_port" ] && break
		sleep 0.1
	done
	if [ -z "$serve_port" ]; then
		echo "conformance-server: serve -listen named no URL after 30s; its log:" >&2
		cat "$log" >&2
		exit 1
	fi
	ready "$serve_port" "$log"
}
serve_mode per-client
per_client_port=$serve_port per_client_pid=$serve_pid
serve_mode shared
shared_port=$serve_port shared_pid=$serve_pid

# kill_backends SIGKILLs every backend process of the serve whose PID is
# $1, and waits (at most 30s) until its /readyz on port $2 is 200 again.
kill_backends() {
	local c i
	for c in $(pgrep -P "$1" || true); do kill -KILL "$c" 2>/dev/null || true; done
	for i in $(seq 1 300); do
		if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$2/readyz")" = 200 ]; then
			# A kill between two polls: the first 200 may predate the loss.
			sleep 0.5
			[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$2/readyz")" = 200 ] && return 0
		fi
		sleep 0.1
	done
	echo "conformance-server: serve's backends not back 30s after a kill" >&2
	return 1
}

if [ $# -gt 0 ]; then
	scenarios="$*"
	min=${CONFORMANCE_SERVER_MIN:-1}
else
	min=${CONFORMANCE_SERVER_MIN:-32}
	# "conformance list" prints the server scenarios after the line
	# "Server scenarios", one per line as "  - NAME [VERSIONS]".
	scenarios=$("$conformance" list | sed -n '/^Server scenarios/,/^Client scenarios/p' | sed -n 's/^  - \([^ ]*\).*/\1/p')
fi

# run prints "pass" or "FAIL (checks)" for scenario $1 at URL $2.
run() {
	if (cd "$work" && timeout 120 "$conformance" server --url "$2" --scenario "$1" >"$work/log" 2>&1) &&
		grep -q ', 0 failed' "$work/log"; then
		echo pass
	else
		why=$(sed 's/\x1b\[[0-9;]*m//g' "$work/log" | sed -n 's/.*\[\([^]]*\)\] *FAILURE.*/\1/p' | tr -d ' ' | sort -u | paste -sd, -)
		echo "FAIL${why:+ ($why)}"
		if [ -n "${CONFORMANCE_VERBOSE:-}" ]; then sed 's/\x1b\[[0-9;]*m//g' "$work/log" >&2; fi
	fi
}

total=0 direct=0 per_client=0 shared=0 kills=0
echo "| scenario | everything-server alone | through serve, per-client | through serve, shared |"
echo "|---|---|---|---|"
for s in $scenarios; do
	total=$((total + 1))
	if [ $((total % 4)) = 0 ]; then
		kill_backends "$per_client_pid" "$per_client_port"
		kill_backends "$shared_pid" "$shared_port"
		kills=$((kills + 1))
	fi
	a=$(run "$s" "http://127.0.0.1:$direct_port/mcp")
	b=$(run "$s" "http://127.0.0.1:$per_client_port/mcp")
	c=$(run "$s" "http://127.0.0.1:$shared_port/mcp")
	[ "$a" = pass ] && direct=$((direct + 1))
	[ "$b" = pass ] && per_client=$((per_client + 1))
	[ "$c" = pass ] && shared=$((shared + 1))
	echo "| \`$s\` | $a | $b | $c |"
done
echo
echo "alone: passed $direct/$total; through serve per-client: passed $per_client/$total; shared: passed $shared/$total; backends killed $kills times"
if [ "$total" -eq 0 ]; then
	echo "conformance-server: the suite listed no server scenarios ('conformance list' changed, or failed)" >&2
	exit 1
fi
if [ "$per_client" -lt "$min" ] || [ "$shared" -lt "$min" ]; then
	echo "conformance-server: through serve only $per_client (per-client) and $shared (shared) of $total scenarios pass; at least $min must (alone: $direct)" >&2
	exit 1
fi
if [ "$per_client" -lt "$direct" ] || [ "$shared" -lt "$direct" ]; then
	echo "conformance-server: through serve $per_client (per-client) and $shared (shared) of $total scenarios pass, alone $direct; they must be equal" >&2
	exit 1
fi
