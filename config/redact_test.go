package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A malformed envFile line is reported by file, line and key, never with
// its value.
func TestEnvFileErrorsHideValues(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "secrets.env")
	const secret = "sk-live-4f9a8b7c6d5e4f3a2b1c"
	content := "# keys\nOPENAI_API_KEY: " + secret + "\nMY KEY=" + secret + "\n" + secret + "\n"
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Parse([]byte(`{"servers": {"a": {"command": "x", "envFile": "secrets.env"}}}`), &Options{Dir: dir})
	if err == nil {
		t.Fatal("Parse accepted malformed env file lines")
	}
	got := strings.Split(err.Error(), "\n")
	want := []string{
		"servers.a.envFile: " + file + ", line 2: want KEY=VALUE, but the line of OPENAI_API_KEY has no '=' (its value is not shown)",
		"servers.a.envFile: " + file + `, line 3: want KEY=VALUE with KEY of letters, digits and '_', not the key "MY KEY"`,
		"servers.a.envFile: " + file + ", line 4: want KEY=VALUE, but the line has no '=' (it is not shown: it may hold a secret)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(err.Error(), "4f9a8b7c") {
		t.Errorf("the error quotes the secret: %v", err)
	}
}

// An invalid url is quoted with its query values and userinfo masked.
func TestInvalidURLErrorHidesSecrets(t *testing.T) {
	_, err := Parse([]byte(`{"servers": {"a": {"url": "ftp://u:pw@h/mcp?api_key=s3cret"}}}`), nil)
	want := `servers.a.url must be an http:// or https:// URL such as https://host/mcp, not "ftp://***@h/mcp?api_key=REDACTED"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want it to contain %s", err, want)
	}
	if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "pw@") {
		t.Errorf("err = %v: it quotes a secret", err)
	}
}
