// Package bench_test holds mcpfsm's performance benchmarks: recovery after
// a server crash, crash detection, tool-call overhead and scale. Each one
// measures its floor (the bare SDK doing the same work) in the same run and
// reports the ratio, so the figures mean something on a noisy machine.
// scripts/bench runs them; docs/performance.md explains the figures.
//
// The benchmarks run only with -bench; the tests here are quick checks of
// the harness.
package bench_test

import (
	"testing"

	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

func TestMain(m *testing.M) { fixture.VerifyTestMain(m) }
