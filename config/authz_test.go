package config

import (
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/mcpfsm/mcpfsm/authz"
)

// TestParsePolicy: allowScopes, toolScopes and rateLimit are read into
// the server, in file order, and become its Rules and Limiter.
func TestParsePolicy(t *testing.T) {
	in := `{"servers": {"gh": {"command": "gh-mcp",
		"allowScopes": ["gh:read", "gh:admin"],
		"toolScopes": {"delete_*": ["gh:admin"], "create_*": ["gh:write", "gh:admin"]},
		"rateLimit": "5/s"}}}`
	cfg, err := Parse([]byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Server{Name: "gh", Type: TypeStdio, Command: "gh-mcp",
		AllowScopes: []string{"gh:read", "gh:admin"},
		ToolScopes: []authz.ToolScope{
			{Pattern: "delete_*", Scopes: []string{"gh:admin"}},
			{Pattern: "create_*", Scopes: []string{"gh:write", "gh:admin"}},
		},
		RateLimit: authz.Rate{N: 5, Per: time.Second}}
	s := cfg.Servers[0]
	if diff := cmp.Diff(want, s, cmpopts.IgnoreFields(Server{}, "Reconnect")); diff != "" {
		t.Errorf("server (-want +got):\n%s", diff)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: %q", cfg.Warnings)
	}
	if !s.HasPolicy() {
		t.Error("HasPolicy = false")
	}
	rules, err := s.Rules()
	if err != nil {
		t.Fatal(err)
	}
	reader := authz.Caller{Subject: "a", Scopes: []string{"gh:read"}}
	if ok, _ := rules.Allow(reader, authz.Tool, "get_issue"); !ok {
		t.Error("a reader was refused get_issue")
	}
	if ok, missing := rules.Allow(reader, authz.Tool, "delete_issue"); ok || !cmp.Equal(missing, []string{"gh:admin"}) {
		t.Errorf("a reader's delete_issue: %v, %q", ok, missing)
	}
	if l := s.Limiter(clock.NewMock()); l.Rate() != want.RateLimit {
		t.Errorf("Limiter rate = %v", l.Rate())
	}
	var none Server
	if none.HasPolicy() || none.Limiter(nil) != nil {
		t.Error("a server without a policy has one")
	}
	if r, err := none.Rules(); r != nil || err != nil {
		t.Errorf("Rules of a server without rules = %v, %v", r, err)
	}
}

// TestPolicyErrors: every bad policy value is an error naming its path
// and the fix, all at once.
func TestPolicyErrors(t *testing.T) {
	in := `{"servers": {
		"a": {"command": "x", "allowScopes": []},
		"b": {"command": "x", "allowScopes": "gh:read"},
		"c": {"command": "x", "allowScopes": ["ok", "two words", 3, ""]},
		"d": {"command": "x", "toolScopes": {"rm": [], "read?": ["x"], "ls": "x", "cp": ["a\""]}},
		"e": {"command": "x", "toolScopes": ["rm"]},
		"f": {"command": "x", "rateLimit": "5/d"},
		"g": {"command": "x", "rateLimit": 5},
		"h": {"command": "x", "rateLimit": "0/s"},
		"i": {"command": "x", "allowscopes": ["x"]}
	}}`
	_, err := Parse([]byte(in), nil)
	if err == nil {
		t.Fatal("Parse accepted bad policies")
	}
	want := []string{
		`servers.a.allowScopes is empty: no caller but the operator could use the server; list the scopes of which a caller needs one, or remove the key`,
		`servers.b.allowScopes must be an array of OAuth scopes, not a string`,
		`servers.c.allowScopes[1]: "two words" is not a scope: give each scope as one token, without spaces or quotes`,
		`servers.c.allowScopes[2] must be a string, not a number`,
		`servers.c.allowScopes[3]: a scope must not be empty`,
		`servers.d.toolScopes["rm"] is empty: list the scopes of which a caller needs one to use these tools, or remove the pattern`,
		`servers.d.toolScopes["read?"]: the pattern "read?" is not a tool name pattern: only * is a wildcard (? [ ] { } \ are not); give the tool's name, as in "read_*"`,
		`servers.d.toolScopes["ls"] must be an array of OAuth scopes, not a string`,
		`servers.d.toolScopes["cp"][0]: "a\"" is not a scope: give each scope as one token, without spaces or quotes`,
		`servers.e.toolScopes must be a JSON object, not an array`,
		`servers.f.rateLimit: "5/d": the period must be s, m or h (per second, minute or hour), as in "5/s"`,
		`servers.g.rateLimit must be a string, not a number`,
		`servers.h.rateLimit: "0/s": the number of calls must be a whole number from 1 to 1000000, as in "5/s"`,
		`servers.i.allowscopes is not a server option (did you mean allowScopes?)`,
	}
	if diff := cmp.Diff(want, strings.Split(err.Error(), "\n")); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// TestPolicyWarnings: a toolScopes pattern that can guard nothing, by
// what the file itself says of the tools, is a warning; so are an empty
// toolScopes and a scope listed twice.
func TestPolicyWarnings(t *testing.T) {
	in := `{"servers": {
		"a": {"command": "x", "includeTools": ["get_issue", "delete_issue", "rm"], "excludeTools": ["rm"],
			"toolScopes": {"delete_*": ["admin"], "create_*": ["admin"], "rm": ["admin"]}},
		"b": {"command": "x", "includeTools": ["get_*"], "toolScopes": {"create_*": ["admin"]}},
		"c": {"command": "x", "excludeTools": ["delete_*"], "toolScopes": {"delete_*": ["admin"]}},
		"d": {"command": "x", "toolScopes": {}, "allowScopes": ["x", "x"]}
	}}`
	cfg, err := Parse([]byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`servers.a.toolScopes["create_*"] matches none of the tools includeTools serves (get_issue, delete_issue, rm): it guards nothing`,
		`servers.a.toolScopes["rm"] guards nothing: excludeTools leaves out every tool it matches`,
		`servers.c.toolScopes["delete_*"] guards nothing: excludeTools leaves out every tool it matches`,
		`servers.d.toolScopes is empty: it guards nothing; remove it, or map tool name patterns to scopes`,
		`servers.d.allowScopes[1]: scope "x" is listed twice`,
	}
	if diff := cmp.Diff(want, cfg.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestPolicySummary(t *testing.T) {
	s := Server{AllowScopes: []string{"a", "b"}, ToolScopes: []authz.ToolScope{{Pattern: "rm_*", Scopes: []string{"a"}}}, RateLimit: authz.Rate{N: 5, Per: time.Minute}}
	want := "callers need scope a or b; toolScopes for rm_* (matched against the server's tools when serve lists them); at most 5/m per caller"
	if got := s.PolicySummary(); got != want {
		t.Errorf("PolicySummary:\n got %s\nwant %s", got, want)
	}
	if got := (Server{}).PolicySummary(); got != "" {
		t.Errorf("no policy: %q", got)
	}
}
