package config

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEConfigs keeps the README honest: every config file it names
// exists and loads, and every JSON example in it parses.
func TestREADMEConfigs(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	lookup := env("GITHUB_PERSONAL_ACCESS_TOKEN", "x")
	files := map[string]bool{}
	for _, m := range regexp.MustCompile(`config/testdata/[A-Za-z0-9_./-]+\.(json|toml)`).FindAllString(readme, -1) {
		files[m] = true
	}
	if len(files) < 8 {
		t.Errorf("the README names %d example configs, want at least 8: %v", len(files), files)
	}
	for f := range files {
		if _, err := Load(strings.TrimPrefix(f, "config/"), &Options{LookupEnv: lookup}); err != nil {
			t.Errorf("README names %s: %v", f, err)
		}
	}
	blocks := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(readme, -1)
	if len(blocks) < 2 {
		t.Errorf("the README has %d JSON examples, want at least 2", len(blocks))
	}
	for _, b := range blocks {
		if _, err := Parse([]byte(b[1]), &Options{LookupEnv: lookup}); err != nil {
			t.Errorf("README example does not parse: %v\n%s", err, b[1])
		}
	}
}
