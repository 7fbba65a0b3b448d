// Package e2e_test runs supervisors against real server processes: the
// fixture server of internal/testserver, and a third-party npm server when
// it is installed (see .ci/npm-servers.sh).
package e2e_test

import (
	"testing"

	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

func TestMain(m *testing.M) { fixture.VerifyTestMain(m) }
