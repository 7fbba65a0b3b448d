#!/usr/bin/env bash
# Runs the required server scenarios of the MCP conformance suite, for
# each requirement set (2025-11-25 and 2026-07-28), against
# (a) go-sdk's conformance everything-server alone: stateful Streamable
# HTTP for 2025-11-25 (a stateless one cannot send requests to its
# clients), stateless for 2026-07-28 (the only way it serves that set),
# and 'mcpfsm serve -names raw -listen' with that server as its one
# stdio backend, (b) isolated per client (the default) and (c) shared by
# every client, and prints a Markdown table of the outcomes per set.
# Each set runs in one process of the suite per target (--requirements
# SET: a process per scenario costs seconds each on a loaded machine);
# before each run through serve, serve's backends are SIGKILLed and the
# run waits until serve's /readyz says they are back. A scenario passes
# when none of its checks fails (warnings do not count), as the suite
# scores it. It exits non-zero when, on either set, (b) or (c) passes
# fewer scenarios than (a): through serve a client must be able to do
# what it does against the server directly; and, so that a broken
# runner, an empty scenario list or a changed result format (every
# scenario failing every way) cannot pass, when a list is empty or (b)
# or (c) passes fewer than MIN of all the sets' scenarios.
# Usage: conformance-server.sh [SCENARIO...] (default: every required
# server scenario of both sets; named scenarios run one by one, with
# --scenario S --spec-version SET --force, under each set). MIN is
# $CONFORMANCE_SERVER_MIN, by default 60 for every scenario and 1 for a
# named list. $CONFORMANCE_SETS narrows the sets. The suite is installed
# by .ci/conformance.sh.
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

# direct starts the everything-server alone, stateful if $1 is true, and
# sets direct_port and direct_pid.
direct() {
	direct_port=$(freeport)
	"$work/everything" -http "127.0.0.1:$direct_port" -stateless="$([ "$1" = true ] && echo false || echo true)" >"$work/direct.log" 2>&1 &
	direct_pid=$!
	pids+=($direct_pid)
	ready "$direct_port" "$work/direct.log"
}

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

sets=${CONFORMANCE_SETS:-"2025-11-25 2026-07-28"}
if [ $# -gt 0 ]; then
	named="$*"
	min=${CONFORMANCE_SERVER_MIN:-1}
else
	named=
	min=${CONFORMANCE_SERVER_MIN:-60}
fi

# scenarios_of prints the required server scenarios of set $1: "conformance
# list" prints them after the line "Server scenarios", one per line as
# "  - NAME".
scenarios_of() {
	"$conformance" list --server --requirements "$1" | sed -n '/^Server scenarios/,/^Client scenarios/p' | sed -n 's/^  - \([^ ]*\).*/\1/p'
}

# score prints one line "NAME<TAB>pass" or "NAME<TAB>FAIL (check ids)" for
# each scenario named on stdin, from the results under directory $1 (one
# "server-NAME-TIMESTAMP/checks.json" per scenario run; "FAIL (no
# results)" for a scenario that has none).
score() {
	node -e '
const fs = require("fs"), path = require("path");
const dir = process.argv[1];
const names = fs.readFileSync(0, "utf8").split(/\s+/).filter(Boolean);
const runs = fs.existsSync(dir) ? fs.readdirSync(dir) : [];
for (const name of names) {
	const mine = runs.filter(d => d.startsWith("server-" + name + "-") && /^\d{4}-/.test(d.slice(("server-" + name + "-").length)));
	if (mine.length === 0) { console.log(name + "\tFAIL (no results)"); continue; }
	const ids = new Set();
	for (const d of mine) {
		const f = path.join(dir, d, "checks.json");
		if (!fs.existsSync(f)) { ids.add("no checks"); continue; }
		for (const c of JSON.parse(fs.readFileSync(f, "utf8"))) if (c.status === "FAILURE") ids.add(c.id);
	}
	console.log(name + "\t" + (ids.size === 0 ? "pass" : "FAIL (" + [...ids].sort().join(",") + ")"));
}
' "$1"
}

# run_set runs the scenarios of set $1 at URL $2, results under $3.
run_set() {
	mkdir -p "$3"
	if [ -n "$named" ]; then
		for s in $named; do
			(cd "$work" && timeout 120 "$conformance" server --url "$2" --scenario "$s" --spec-version "$1" --force -o "$3" >>"$3.log" 2>&1) || true
		done
	else
		(cd "$work" && timeout 900 "$conformance" server --url "$2" --requirements "$1" -o "$3" >"$3.log" 2>&1) || true
	fi
	if [ -n "${CONFORMANCE_VERBOSE:-}" ]; then sed 's/\x1b\[[0-9;]*m//g' "$3.log" >&2; fi
}

all_total=0 all_per_client=0 all_shared=0 short=
for set in $sets; do
	began=$(date +%s)
	if [ "$set" = 2025-11-25 ]; then direct true; else direct false; fi
	scenarios=${named:-$(scenarios_of "$set")}
	run_set "$set" "http://127.0.0.1:$direct_port/mcp" "$work/$set-alone"
	kill "$direct_pid" 2>/dev/null || true
	wait "$direct_pid" 2>/dev/null || true
	kill_backends "$per_client_pid" "$per_client_port"
	run_set "$set" "http://127.0.0.1:$per_client_port/mcp" "$work/$set-per-client"
	kill_backends "$shared_pid" "$shared_port"
	run_set "$set" "http://127.0.0.1:$shared_port/mcp" "$work/$set-shared"
	total=0 alone=0 per_client=0 shared=0
	echo "### $set"
	echo
	echo "| scenario | everything-server alone | through serve, per-client | through serve, shared |"
	echo "|---|---|---|---|"
	while IFS="$(printf '\t')" read -r s a b c; do
		total=$((total + 1))
		[ "$a" = pass ] && alone=$((alone + 1))
		[ "$b" = pass ] && per_client=$((per_client + 1))
		[ "$c" = pass ] && shared=$((shared + 1))
		echo "| \`$s\` | $a | $b | $c |"
	done < <(paste <(echo "$scenarios" | score "$work/$set-alone") \
		<(echo "$scenarios" | score "$work/$set-per-client" | cut -f2) \
		<(echo "$scenarios" | score "$work/$set-shared" | cut -f2))
	echo
	echo "$set: alone passed $alone/$total; through serve per-client $per_client/$total, shared $shared/$total (each after a SIGKILL of its backends); $(($(date +%s) - began))s"
	echo
	if [ "$total" -eq 0 ]; then
		echo "conformance-server: the suite listed no server scenarios of $set ('conformance list' changed, or failed)" >&2
		exit 1
	fi
	if [ "$per_client" -lt "$alone" ] || [ "$shared" -lt "$alone" ]; then
		short="$short $set"
		echo "conformance-server: on $set through serve $per_client (per-client) and $shared (shared) of $total scenarios pass, alone $alone; they must be at least as many" >&2
	fi
	all_total=$((all_total + total)) all_per_client=$((all_per_client + per_client)) all_shared=$((all_shared + shared))
done
if [ -n "$short" ]; then
	exit 1
fi
if [ "$all_per_client" -lt "$min" ] || [ "$all_shared" -lt "$min" ]; then
	echo "conformance-server: through serve only $all_per_client (per-client) and $all_shared (shared) of $all_total scenarios pass; at least $min must" >&2
	exit 1
fi
