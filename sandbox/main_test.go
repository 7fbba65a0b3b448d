package sandbox_test

import (
	"os"
	"testing"

	"github.com/mcpfsm/mcpfsm/sandbox"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	sandbox.Init()
	if action := os.Getenv(helperEnv); action != "" {
		os.Exit(helper(action))
	}
	goleak.VerifyTestMain(m)
}
