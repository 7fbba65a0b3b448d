package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEnvFileValues: an env file's values read as its doc says: double
// quotes know \n, \t, \" and \\ and keep every other backslash, so a
// Windows path needs no doubling; single quotes keep everything; a
// comment may follow a closing quote, nothing else may.
func TestEnvFileValues(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "app.env")
	lines := []string{
		`DB_PATH="C:\data\db"`,
		`SHARE="\\server\share"`,
		`ESC="a\\b \"q\" tab\tnl\n"`,
		`RAW='C:\data\db $HOME \n'`,
		`NOTE="x y" # a comment`,
		`EMPTY=""`,
		`BARE=C:\data\db # a comment`,
		`HASH="a # b"`,
	}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse([]byte(`{"servers": {"a": {"command": "x", "envFile": "app.env"}}}`), &Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`DB_PATH=C:\data\db`,
		`SHARE=\server\share`,
		"ESC=a\\b \"q\" tab\tnl\n",
		`RAW=C:\data\db $HOME \n`,
		`NOTE=x y`,
		`EMPTY=`,
		`BARE=C:\data\db`,
		`HASH=a # b`,
	}
	if diff := cmp.Diff(want, cfg.Servers[0].Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}

	bad := filepath.Join(dir, "bad.env")
	if err := os.WriteFile(bad, []byte("OPEN=\"C:\\data\nAFTER=\"x\" y\nSINGLE='open\nESCAPED=\"x\\\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Parse([]byte(`{"servers": {"a": {"command": "x", "envFile": "bad.env"}}}`), &Options{Dir: dir})
	var got []string
	if err != nil {
		got = strings.Split(err.Error(), "\n")
	}
	var wantErrs []string
	for i, key := range []string{"OPEN", "AFTER", "SINGLE", "ESCAPED"} {
		wantErrs = append(wantErrs, "servers.a.envFile: "+bad+", line "+string(rune('1'+i))+": the value of "+key+" has an unterminated or malformed quote")
	}
	if diff := cmp.Diff(wantErrs, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
