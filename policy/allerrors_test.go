package policy_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/policy"
)

// A block with a wrongly typed option and an out-of-range one reports
// both at once, not the type error alone.
func TestParseReportsEveryErrorOfABlock(t *testing.T) {
	_, err := policy.Parse([]byte(`{"maxAttempts": "ten", "initialDelayMs": -5}`), "servers.fs.reconnect")
	if err == nil {
		t.Fatal("Parse accepted the block")
	}
	got := strings.Split(err.Error(), "\n")
	want := []string{
		"servers.fs.reconnect.maxAttempts must be a positive integer, not a string",
		"servers.fs.reconnect.initialDelayMs must be a positive number of milliseconds no greater than 2147483647",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
