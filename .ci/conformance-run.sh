#!/bin/sh
# Runs every client scenario of the MCP conformance suite against one
# client command and prints a Markdown table of the outcomes, then a line
# "passed N/M". Usage: conformance-run.sh CLIENT [MIN_PASSED]
# It exits non-zero when fewer than MIN_PASSED scenarios pass (default: 0,
# report only). The suite is installed by .ci/conformance.sh.
set -eu

client=$1
min=${2:-0}
root=$(cd "$(dirname "$0")/.." && pwd)
conformance=$(sh "$root/.ci/conformance.sh")
PATH="$(sh "$root/.ci/node22.sh" --bin):$PATH"
export PATH

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# "conformance list" prints the client scenarios after the line
# "Client scenarios", one per line as "  - NAME [VERSIONS]".
scenarios=$("$conformance" list | sed -n '/^Client scenarios/,$p' | sed -n 's/^  - \([^ ]*\).*/\1/p')

total=0
passed=0
echo "| scenario | result |"
echo "|---|---|"
for s in $scenarios; do
	total=$((total + 1))
	if (cd "$out" && "$conformance" client --command "$client" --scenario "$s" --timeout 30000 >"$out/log" 2>&1); then
		passed=$((passed + 1))
		echo "| \`$s\` | pass |"
	else
		# The failing checks' names, from the tool's summary lines.
		why=$(sed 's/\x1b\[[0-9;]*m//g' "$out/log" | sed -n 's/.*\[\([^]]*\)\] *FAILURE.*/\1/p' | tr -d ' ' | sort -u | paste -sd, -)
		echo "| \`$s\` | FAIL${why:+ ($why)} |"
	fi
done
echo
echo "passed $passed/$total"
if [ "$passed" -lt "$min" ]; then
	echo "conformance: only $passed of $total client scenarios passed; at least $min must" >&2
	exit 1
fi
