// Package fsm_test holds the table tests of mcpfsm's connection machine: a
// real supervisor over in-memory go-sdk servers on a mock clock, driven by
// scripts of stimuli and compared with the expected transitions and logs.
package fsm_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
