#!/bin/sh
# Runs the MCP conformance suite's required auth client scenarios of both
# requirement sets (2025-11-25 and 2026-07-28) with mcpfsm serve as the
# client: for each scenario internal/conformance/serveclient writes the
# scenario's URL (and, for pre-registration, its client) into a config in
# a host's format and drives "mcpfsm serve" over stdio, with $BROWSER a
# script that follows the authorization URL (curl); serve signs in by
# itself. cmd/conformance-host runs the same scenarios in the same
# run: its passes are the floor. Prints a Markdown table, then
#   serve as client: N/M (floor K)
# and exits non-zero when serve fails a scenario the host passes that is
# not listed in .ci/conformance-serve-client.known (each listed gap is
# printed, and the floor is then K minus those gaps), or no auth
# scenario is listed. The suite is installed by .ci/conformance.sh; curl
# must be installed.
# Usage: conformance-serve-client.sh
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
conformance=$(sh "$root/.ci/conformance.sh")
PATH="$(sh "$root/.ci/node22.sh" --bin):$PATH"
export PATH
command -v curl >/dev/null 2>&1 || {
	echo "conformance-serve-client: curl is required (the \$BROWSER script follows the authorization URL with it)" >&2
	exit 1
}

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
(cd "$root" && go build -o "$out/mcpfsm" ./cmd/mcpfsm &&
	go build -o "$out/serveclient" ./internal/conformance/serveclient &&
	go build -o "$out/host" ./cmd/conformance-host)
# The host runs the auth scenarios only, as serveclient does: the others
# are not counted here (.ci/conformance-run.sh runs them).
cat >"$out/host-auth.sh" <<HOST
#!/bin/sh
case "\${MCP_CONFORMANCE_SCENARIO:-}" in auth/*) exec "$out/host" "\$@" ;; esac
HOST
chmod +x "$out/host-auth.sh"

# score CLIENT DIR REV: runs the set REV against CLIENT, its output in
# DIR.log (see .ci/conformance-run.sh), with the suite's default 30 s a
# scenario. The suite starts every scenario of the set at once, its
# servers all in one Node process: a sign-in through serve takes 0.6 s
# alone (0.1 s of CPU) but 10-16 s among the set's ~40 on 2 busy cores,
# so the two clients' runs of a set go one after the other, never at
# once (together they took each scenario past 30 s).
score() {
	mkdir -p "$2"
	(cd "$out" && "$conformance" client --command "$1" --requirements "$3" -o "$2" >"$2.log" 2>&1) || true
}

# result DIR SCENARIO: "pass", or "FAIL" with the failed checks' ids.
result() {
	mark=$(sed 's/\x1b\[[0-9;]*m//g' "$1.log" | awk -v n="$2:" '$2 == n && ($1 == "✓" || $1 == "✗") { print $1; exit }')
	case $mark in
	"✓") echo pass ;;
	"") echo "FAIL (no result)" ;;
	*)
		ids=$(node "$root/.ci/conformance-checks.mjs" "$1" "$2")
		echo "FAIL${ids:+ ($ids)}"
		;;
	esac
}

known="$root/.ci/conformance-serve-client.known"
total=0
passed=0
floor=0
gaps=0
unexpected=""
echo "| set | scenario | mcpfsm serve (serveclient) | cmd/conformance-host |"
echo "|---|---|---|---|"
for rev in 2025-11-25 2026-07-28; do
	scenarios=$("$conformance" list --client --requirements "$rev" |
		sed -n '/^Client scenarios/,/^$/p' | sed -n 's/^  - \(auth\/[^ ]*\).*/\1/p')
	score "$out/serveclient $out/mcpfsm" "$out/serve-$rev" "$rev"
	score "$out/host-auth.sh" "$out/host-$rev" "$rev"
	for s in $scenarios; do
		total=$((total + 1))
		n=$(result "$out/serve-$rev" "$s")
		k=$(result "$out/host-$rev" "$s")
		[ "$n" = pass ] && passed=$((passed + 1))
		[ "$k" = pass ] && floor=$((floor + 1))
		listed=no
		grep -q "^$rev $s " "$known" && listed=yes
		if [ "$n" != pass ] && [ "$k" = pass ]; then
			if [ $listed = yes ]; then
				gaps=$((gaps + 1))
				n="$n (known gap)"
			else
				unexpected="$unexpected $rev:$s"
			fi
		elif [ $listed = yes ]; then
			echo "conformance-serve-client: $rev $s is listed in $known but did not fail where the host passed: remove it" >&2
		fi
		echo "| $rev | \`$s\` | $n | $k |"
	done
done
echo
echo "serve as client: $passed/$total (floor $floor; $gaps known gap(s) listed in .ci/conformance-serve-client.known)"
if [ "$total" -eq 0 ]; then
	echo "conformance-serve-client: no required auth client scenarios listed" >&2
	exit 1
fi
if [ -n "$unexpected" ] || [ "$passed" -lt $((floor - gaps)) ]; then
	echo "conformance-serve-client: mcpfsm serve passed $passed of $total auth client scenarios, below cmd/conformance-host's $floor less $gaps known gap(s); failed where the host passed:$unexpected" >&2
	exit 1
fi
