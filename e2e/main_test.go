// Package e2e_test runs supervisors against real server processes: the
// fixture server of internal/testserver, and a third-party npm server when
// it is installed (see .ci/npm-servers.sh).
package e2e_test

import (
	"testing"

	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"go.uber.org/goleak"
)

// runner removes the fixture binary after the tests and before goleak
// checks for leaked goroutines.
type runner struct{ m *testing.M }

func (r runner) Run() int {
	code := r.m.Run()
	fixture.Cleanup()
	return code
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(runner{m}) }
