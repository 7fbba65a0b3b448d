package sandbox_test

import (
	"testing"

	"github.com/mcpfsm/mcpfsm/sandbox"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	sandbox.Init()
	helperMain()
	goleak.VerifyTestMain(m)
}
