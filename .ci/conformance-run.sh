#!/bin/sh
# Runs the MCP conformance suite's required client scenarios of both
# requirement sets (2025-11-25 and 2026-07-28) in the suite's own
# requirements mode (conformance client --requirements REV, its scenarios
# in parallel) against a host and, beside it, a floor client; prints a
# Markdown table of the outcomes (a failure with its failed checks' ids),
# then a line per set "REV: host N/M, floor K/M".
# Usage: conformance-run.sh HOST FLOOR
# It exits non-zero when the host passes fewer required scenarios of a set
# than the floor does, or a set lists none. The suite is installed by
# .ci/conformance.sh.
set -eu

host=$1
floor=$2
root=$(cd "$(dirname "$0")/.." && pwd)
conformance=$(sh "$root/.ci/conformance.sh")
PATH="$(sh "$root/.ci/node22.sh" --bin):$PATH"
export PATH

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# score CLIENT DIR REV: runs the set REV against CLIENT, results in DIR,
# its output in DIR.log. Its exit status is ignored: result reads each
# scenario's line of the summary ("✓ NAME: ..." or "✗ NAME: ...").
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

summary=""
status=0
echo "| set | scenario | cmd/conformance-host | go-sdk's conformance client |"
echo "|---|---|---|---|"
for rev in 2025-11-25 2026-07-28; do
	# "list --client --requirements REV" prints the required client
	# scenarios after the line "Client scenarios", one per line as
	# "  - NAME", up to the next blank line.
	scenarios=$("$conformance" list --client --requirements "$rev" |
		sed -n '/^Client scenarios/,/^$/p' | sed -n 's/^  - \([^ ]*\).*/\1/p')
	score "$host" "$out/host-$rev" "$rev"
	score "$floor" "$out/floor-$rev" "$rev"
	total=0
	passed=0
	floored=0
	for s in $scenarios; do
		total=$((total + 1))
		h=$(result "$out/host-$rev" "$s")
		f=$(result "$out/floor-$rev" "$s")
		[ "$h" = pass ] && passed=$((passed + 1))
		[ "$f" = pass ] && floored=$((floored + 1))
		echo "| $rev | \`$s\` | $h | $f |"
	done
	summary="$summary$rev: host $passed/$total, floor $floored/$total
"
	if [ "$total" -eq 0 ]; then
		echo "conformance: no required client scenarios listed for $rev" >&2
		status=1
	elif [ "$passed" -lt "$floored" ]; then
		echo "conformance: $rev: the host passed $passed of $total required client scenarios, below the floor's $floored" >&2
		status=1
	fi
done
echo
printf '%s' "$summary"
exit $status
