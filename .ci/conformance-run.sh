#!/bin/sh
# Runs the MCP conformance suite's client scenarios of both requirement
# sets (2025-11-25 and 2026-07-28), each scenario as the suite's
# --requirements mode runs it (--spec-version REV --force), against a host
# and beside it a floor client, and prints a Markdown table of the
# outcomes, then a line per set "REV: host N/M, floor K/M".
# Usage: conformance-run.sh HOST FLOOR
# It exits non-zero when the host passes fewer scenarios of a set than
# the floor does. A scenario passes when the suite reports it passed
# (every check, and the client's exit). The suite is installed by
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

# run CLIENT SCENARIO REV: prints "pass", or "FAIL" with the failing
# checks' ids from the tool's summary lines.
run() {
	if (cd "$out" && "$conformance" client --command "$1" --scenario "$2" --spec-version "$3" --force \
		--timeout 30000 -o "$out/results" >"$out/log" 2>&1); then
		echo pass
		return
	fi
	why=$(sed 's/\x1b\[[0-9;]*m//g' "$out/log" | sed -n 's/.*\[\([^]]*\)\] *FAILURE.*/\1/p' | tr -d ' ' | sort -u | paste -sd, -)
	if grep -q 'CLIENT EXITED WITH ERROR' "$out/log"; then
		why="${why:+$why, }exit status"
	fi
	echo "FAIL${why:+ ($why)}"
}

summary=""
status=0
echo "| set | scenario | internal/conformance/host | go-sdk's conformance client |"
echo "|---|---|---|---|"
for rev in 2025-11-25 2026-07-28; do
	# "list --client --requirements REV" prints the required client
	# scenarios after the line "Client scenarios", one per line as
	# "  - NAME", up to the next blank line.
	scenarios=$("$conformance" list --client --requirements "$rev" |
		sed -n '/^Client scenarios/,/^$/p' | sed -n 's/^  - \([^ ]*\).*/\1/p')
	total=0
	passed=0
	floored=0
	for s in $scenarios; do
		total=$((total + 1))
		h=$(run "$host" "$s" "$rev")
		f=$(run "$floor" "$s" "$rev")
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
