// Package fsm_test holds the deterministic, table-driven tests of the
// declared machines (conn.Table and its peers), as the design card names
// it: a real supervisor over in-memory go-sdk servers on a mock clock,
// driven by scripts of stimuli and compared with the wanted state
// sequences and logs. The generated edge coverage of the tables is
// conn's TestCoverage.
package fsm_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
