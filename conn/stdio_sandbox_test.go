package conn_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/sandbox"
)

func TestStdioSandboxValidation(t *testing.T) {
	tr := conn.Command("true")
	tr.Launcher = &sandbox.Spec{AllowWrite: []string{"relative/out"}}
	_, err := conn.Start(context.Background(), conn.Config{Name: "s", Transport: tr, Registry: conn.NewRegistry()})
	var ce *conn.ConfigError
	if !errors.As(err, &ce) || ce.Field != "Transport" || !strings.Contains(err.Error(), "Stdio.Launcher: sandbox: AllowWrite[0]") {
		t.Errorf("a relative sandbox path: err = %v, want a *ConfigError for Transport naming Stdio.Launcher", err)
	}
}
