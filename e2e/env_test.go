package e2e_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn"
)

// secrets are host variables that hold credentials under names and values
// that a scrubber looking for TOKEN or SECRET misses.
var secrets = map[string]string{
	"DATABASE_URL":   "postgres://app:s3cret@db/app",
	"REDIS_URL":      "redis://:s3cret@cache:6379/0",
	"MYSQL_PWD":      "s3cret",
	"DB_PASS":        "s3cret",
	"SMTP_PASS":      "s3cret",
	"GPG_PASSPHRASE": "s3cret",
	"SENTRY_DSN":     "https://s3cret@sentry.example/1",
	"OPENAI_KEY":     "s3cret",
}

// TestHostSecretsNeverReachTheServer: the real child's environment holds
// the allow-listed host variables and Env, and with InheritEnv the rest
// of the host's, but never a secret.
func TestHostSecretsNeverReachTheServer(t *testing.T) {
	for name, value := range secrets {
		t.Setenv(name, value)
	}
	t.Setenv("MCPFSM_TEST_INNOCENT", "yes")
	for _, inherit := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "InheritEnv"}[inherit], func(t *testing.T) {
			e := newEnv(t)
			envFile := filepath.Join(e.dir, "env")
			cmd := e.command("-env-file", envFile)
			cmd.Env = []string{"EXPLICIT=1", "DB_PASS=given-on-purpose"}
			cmd.InheritEnv = inherit
			e.start(conn.Config{Transport: cmd, Reconnect: disabled()})
			e.rec.Await(t, wait, conn.Established)
			data, err := os.ReadFile(envFile)
			if err != nil {
				t.Fatal(err)
			}
			env := strings.Split(strings.TrimSpace(string(data)), "\n")
			for name := range secrets {
				for _, kv := range env {
					if strings.HasPrefix(kv, name+"=") && kv != "DB_PASS=given-on-purpose" {
						t.Errorf("the server got %s", kv)
					}
				}
			}
			for _, want := range []string{"PATH=" + os.Getenv("PATH"), "EXPLICIT=1", "DB_PASS=given-on-purpose"} {
				if !slices.Contains(env, want) {
					t.Errorf("the server did not get %s", want)
				}
			}
			if got := slices.Contains(env, "MCPFSM_TEST_INNOCENT=yes"); got != inherit {
				t.Errorf("innocent host variable passed: %v, want %v", got, inherit)
			}
		})
	}
}
