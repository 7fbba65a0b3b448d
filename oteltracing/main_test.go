package oteltracing_test

import (
	"testing"

	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

func TestMain(m *testing.M) { fixture.VerifyTestMain(m) }
