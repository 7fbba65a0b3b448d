// Package behaviour_test holds the behaviour tests of conn's supervisor: a
// real supervisor over in-memory go-sdk servers on a mock clock, driven by
// scripts of stimuli and compared with the expected transitions and logs.
package behaviour_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
