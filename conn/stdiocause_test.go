package conn

import (
	"testing"
)

func TestServerExitMessage(t *testing.T) {
	tests := []struct {
		e    ServerExit
		want string
	}{
		{ServerExit{Code: 3, Stderr: []string{"a", "fatal: missing API key"}}, "the server exited: exit status 3; stderr: a | fatal: missing API key"},
		{ServerExit{Code: -1, Signal: "SIGKILL"}, "the server was killed by SIGKILL"},
		{ServerExit{Code: -1, Signal: "SIGTERM", BySupervisor: true}, "the server was killed by SIGTERM (sent by the supervisor after the grace period)"},
		{ServerExit{Code: 2, Limit: "out of memory under the sandbox's memoryMB 256", Stderr: []string{"fatal error: runtime: out of memory"}},
			"the server exited: out of memory under the sandbox's memoryMB 256 (exit status 2); stderr: fatal error: runtime: out of memory"},
		{ServerExit{Code: -1, Signal: "SIGABRT", Limit: "out of memory under the sandbox's memoryMB 64"},
			"the server exited: out of memory under the sandbox's memoryMB 64 (killed by SIGABRT)"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestServerExitBeforeAnsweringMessage(t *testing.T) {
	e := ServerExit{Code: 1, Stderr: []string{"GITHUB_TOKEN is not set"}, BeforeAnswering: true}
	if got, want := e.Error(), "the server exited before answering: exit status 1; stderr: GITHUB_TOKEN is not set"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
