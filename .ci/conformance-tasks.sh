#!/usr/bin/env bash
# Runs the tasks extension's server scenarios of the MCP conformance
# suite (tasks-*, io.modelcontextprotocol/tasks, SEP-2663) on protocol
# 2026-07-28 through 'mcpfsm serve -names raw -listen', whose one stdio
# backend is the fixture internal/fixture/tasksserver (a go-sdk server
# with the tools the scenarios call and no tasks of its own: serve runs
# the calls as tasks), isolated per client and shared, the two side by
# side. A scenario is scored when one of its checks is not SKIPPED (the
# suite skips every check of tasks-status-notifications), and passes
# when none FAILs. It prints a Markdown table and
# "tasks through serve: N/M" per isolation, and exits non-zero when a
# scored scenario fails in either, or when fewer than MIN are scored
# (a broken runner or an empty list cannot pass). MIN is
# $CONFORMANCE_TASKS_MIN, by default 9. Usage: conformance-tasks.sh
# [SCENARIO...] (default: every tasks-* server scenario the suite lists).
# The suite is installed by .ci/conformance.sh.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
conformance=$(sh "$root/.ci/conformance.sh")
PATH="$(sh "$root/.ci/node22.sh" --bin):$PATH"
export PATH
began=$(date +%s)

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

(cd "$root" && go build -o "$work/tasksserver" ./internal/fixture/tasksserver)
(cd "$root" && go build -o "$work/mcpfsm" ./cmd/mcpfsm)

if [ $# -gt 0 ]; then
	scenarios="$*"
	min=${CONFORMANCE_TASKS_MIN:-1}
else
	scenarios=$("$conformance" list --server | sed -n 's/^  - \(tasks-[^ ]*\).*/\1/p')
	min=${CONFORMANCE_TASKS_MIN:-9}
fi
if [ -z "$scenarios" ]; then
	echo "conformance-tasks: the suite lists no tasks-* server scenario ('conformance list' changed, or failed)" >&2
	exit 1
fi

# serve_mode starts serve with the fixture isolated as $1 on a port the
# kernel picks, and sets serve_port from the URL it logs.
serve_mode() {
	local log="$work/serve-$1.log" i
	printf '{"mcpServers": {"tasks": {"command": "%s", "isolation": "%s"}}}\n' "$work/tasksserver" "$1" >"$work/servers-$1.json"
	"$work/mcpfsm" serve -config "$work/servers-$1.json" -names raw -listen 127.0.0.1:0 -unauthenticated >"$log" 2>&1 &
	pids+=($!)
	serve_port=
	for i in $(seq 1 300); do
		serve_port=$(sed -n 's|.*serving MCP over Streamable HTTP at http://127\.0\.0\.1:\([0-9]*\)/mcp.*|\1|p' "$log" | head -1)
		[ -n "$serve_port" ] && return 0
		sleep 0.1
	done
	echo "conformance-tasks: serve -listen named no URL after 30s; its log:" >&2
	cat "$log" >&2
	exit 1
}

# run_mode runs every scenario against serve isolated as $1 on port $2,
# results under $work/$1.
run_mode() {
	local s
	mkdir -p "$work/$1"
	for s in $scenarios; do
		(cd "$work" && timeout 120 "$conformance" server --url "http://127.0.0.1:$2/mcp" --scenario "$s" \
			--spec-version 2026-07-28 --force -o "$work/$1" >>"$work/$1.log" 2>&1) || true
	done
}

serve_mode per-client
per_client_port=$serve_port
serve_mode shared
shared_port=$serve_port
run_mode per-client "$per_client_port" &
runner=$!
run_mode shared "$shared_port"
wait "$runner"
if [ -n "${CONFORMANCE_VERBOSE:-}" ]; then sed 's/\x1b\[[0-9;]*m//g' "$work/per-client.log" "$work/shared.log" >&2; fi

# score prints "NAME<TAB>pass", "NAME<TAB>unscored" or "NAME<TAB>FAIL
# (check ids)" for each scenario named on stdin, from the results under
# directory $1 ("server-NAME-TIMESTAMP/checks.json").
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
	let scored = false;
	for (const d of mine) {
		const f = path.join(dir, d, "checks.json");
		if (!fs.existsSync(f)) { ids.add("no checks"); continue; }
		for (const c of JSON.parse(fs.readFileSync(f, "utf8"))) {
			if (c.status !== "SKIPPED") scored = true;
			if (c.status === "FAILURE") ids.add(c.id);
		}
	}
	console.log(name + "\t" + (ids.size > 0 ? "FAIL (" + [...ids].sort().join(",") + ")" : scored ? "pass" : "unscored"));
}
' "$1"
}

echo "### tasks extension (2026-07-28) through serve, fixture backend"
echo
echo "| scenario | through serve, per-client | through serve, shared |"
echo "|---|---|---|"
short=
for mode in per-client shared; do
	eval "scored_$(echo $mode | tr - _)=0 passed_$(echo $mode | tr - _)=0"
done
while IFS="$(printf '\t')" read -r s a b; do
	echo "| \`$s\` | $a | $b |"
	[ "$a" != unscored ] && scored_per_client=$((scored_per_client + 1))
	[ "$a" = pass ] && passed_per_client=$((passed_per_client + 1))
	[ "$b" != unscored ] && scored_shared=$((scored_shared + 1))
	[ "$b" = pass ] && passed_shared=$((passed_shared + 1))
done < <(paste <(echo "$scenarios" | score "$work/per-client") <(echo "$scenarios" | score "$work/shared" | cut -f2))
echo
echo "tasks through serve: $passed_per_client/$scored_per_client per-client, $passed_shared/$scored_shared shared (unscored: every check skipped); $(($(date +%s) - began))s"
for mode in per_client shared; do
	eval "p=\$passed_$mode s=\$scored_$mode"
	if [ "$p" -lt "$s" ]; then short="$short $mode"; fi
	if [ "$s" -lt "$min" ]; then
		echo "conformance-tasks: only $s tasks scenarios scored ($mode); at least $min must" >&2
		exit 1
	fi
done
if [ -n "$short" ]; then
	echo "conformance-tasks: a scored tasks scenario fails through serve ($short); every one must pass" >&2
	exit 1
fi
