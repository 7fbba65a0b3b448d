package authz_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/access"
	"github.com/mcpfsm/mcpfsm/authz"
)

// github is the rules of a server whose tools need gh:read, whose
// deleting tools also need gh:admin, and whose creating tools need
// gh:write or gh:admin.
func github(t *testing.T) *authz.Rules {
	t.Helper()
	r, err := authz.NewRules("github", []string{"gh:read", "gh:admin"}, []authz.ToolScope{
		{Pattern: "delete_*", Scopes: []string{"gh:admin"}},
		{Pattern: "*_repository", Scopes: []string{"gh:repo"}},
		{Pattern: "create_*", Scopes: []string{"gh:write", "gh:admin"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestAllow(t *testing.T) {
	r := github(t)
	reader := authz.Caller{Subject: "alice", Scopes: []string{"gh:read"}}
	writer := authz.Caller{Subject: "bob", Scopes: []string{"other", "gh:read", "gh:write"}}
	admin := authz.Caller{Subject: "carol", Scopes: []string{"gh:admin", "gh:repo"}}
	nobody := authz.Caller{Subject: "dave", Scopes: []string{"mcp"}}
	operator := authz.Caller{Subject: access.SubjectToken, Operator: true}
	for _, tc := range []struct {
		who     string
		c       authz.Caller
		kind    authz.Kind
		name    string
		missing []string // nil: allowed
	}{
		{"reader", reader, authz.Tool, "get_issue", nil},
		{"reader", reader, authz.Prompt, "summarise", nil},
		{"reader", reader, authz.Resource, "repo://x/delete_me", nil},
		{"reader", reader, authz.Tool, "delete_issue", []string{"gh:admin"}},
		{"reader", reader, authz.Tool, "create_issue", []string{"gh:write", "gh:admin"}},
		{"reader", reader, authz.Prompt, "create_pr", []string{"gh:write", "gh:admin"}},
		{"writer", writer, authz.Tool, "create_issue", nil},
		{"writer", writer, authz.Tool, "delete_issue", []string{"gh:admin"}},
		// every matching pattern applies: delete_repository needs gh:admin and gh:repo
		{"admin", admin, authz.Tool, "delete_repository", nil},
		{"admin without gh:repo", authz.Caller{Scopes: []string{"gh:admin"}}, authz.Tool, "delete_repository", []string{"gh:repo"}},
		{"nobody", nobody, authz.Tool, "get_issue", []string{"gh:read", "gh:admin"}},
		{"nobody", nobody, authz.Resource, "repo://x", []string{"gh:read", "gh:admin"}},
		{"anonymous", authz.Caller{}, authz.Tool, "get_issue", []string{"gh:read", "gh:admin"}},
		{"operator", operator, authz.Tool, "delete_repository", nil},
		{"operator", operator, authz.Resource, "repo://x", nil},
	} {
		ok, missing := r.Allow(tc.c, tc.kind, tc.name)
		if ok != (tc.missing == nil) || !cmp.Equal(missing, tc.missing) {
			t.Errorf("%s: Allow(%s %q) = %v, %q; want missing %q", tc.who, tc.kind, tc.name, ok, missing, tc.missing)
		}
	}
}

// TestNilRulesAllowEverything: a server without rules costs nothing and
// refuses nobody.
func TestNilRulesAllowEverything(t *testing.T) {
	r, err := authz.NewRules("x", nil, nil)
	if err != nil || r != nil {
		t.Fatalf("NewRules without rules = %v, %v; want nil, nil", r, err)
	}
	if ok, _ := r.Allow(authz.Caller{}, authz.Tool, "anything"); !ok {
		t.Error("nil rules refused a call")
	}
	if err := r.Check(authz.Caller{}, authz.Prompt, "p"); err != nil {
		t.Error(err)
	}
	only, err := authz.NewRules("x", nil, []authz.ToolScope{{Pattern: "rm", Scopes: []string{"admin"}}})
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := only.Allow(authz.Caller{}, authz.Tool, "ls"); !ok {
		t.Error("without allowScopes, a tool no pattern matches was refused")
	}
	if ok, _ := only.Allow(authz.Caller{}, authz.Tool, "rm"); ok {
		t.Error("toolScopes alone did not guard its tool")
	}
}

// TestDeniedErrorNamesTheScopeOnly: the refusal says what the caller
// lacks, and nothing of other tools or callers.
func TestDeniedErrorNamesTheScopeOnly(t *testing.T) {
	r := github(t)
	err := r.Check(authz.Caller{Subject: "alice", Scopes: []string{"gh:read"}}, authz.Tool, "delete_issue")
	var d *authz.DeniedError
	if !errors.As(err, &d) || !errors.Is(err, authz.ErrDenied) {
		t.Fatalf("Check = %v, want a *DeniedError matching ErrDenied", err)
	}
	want := `tool "delete_issue" of server "github" needs scope "gh:admin", which this caller's token lacks; ask for an access token with it`
	if err.Error() != want {
		t.Errorf("refusal:\n got %s\nwant %s", err, want)
	}
	for _, leak := range []string{"create_", "gh:write", "gh:repo", "alice", "gh:read"} {
		if strings.Contains(err.Error(), leak) {
			t.Errorf("refusal %q shows %q", err, leak)
		}
	}
	err = r.Check(authz.Caller{}, authz.Resource, "repo://secret?token=x")
	if want := `the resources of server "github" need one of the scopes "gh:read", "gh:admin", which this caller's token lacks; ask for an access token with it`; err == nil || err.Error() != want {
		t.Errorf("resource refusal:\n got %v\nwant %s", err, want)
	}
	// Missing is the error's own copy.
	d.Missing[0] = "changed"
	if _, missing := r.Allow(authz.Caller{}, authz.Tool, "delete_issue"); missing[0] != "gh:read" {
		t.Errorf("changing an error's Missing changed the rules: %q", missing)
	}
}

func TestNewRulesErrors(t *testing.T) {
	for _, tc := range []struct {
		allow []string
		tools []authz.ToolScope
		want  string
	}{
		{[]string{}, nil, "allowScopes is empty"},
		{[]string{"a b"}, nil, `allowScopes: "a b" is not a scope`},
		{[]string{""}, nil, "allowScopes: a scope must not be empty"},
		{nil, []authz.ToolScope{{Pattern: "read?", Scopes: []string{"a"}}}, `toolScopes: pattern "read?" is not a tool name pattern`},
		{nil, []authz.ToolScope{{Pattern: "rm", Scopes: nil}}, `toolScopes["rm"] is empty`},
		{nil, []authz.ToolScope{{Pattern: "rm", Scopes: []string{`a"`}}}, `toolScopes["rm"]: "a\"" is not a scope`},
	} {
		_, err := authz.NewRules("srv", tc.allow, tc.tools)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `server "srv"`) {
			t.Errorf("NewRules(%q, %v) = %v, want an error with %q", tc.allow, tc.tools, err, tc.want)
		}
	}
}

func TestUnmatchedAndEqual(t *testing.T) {
	r := github(t)
	if got := r.Unmatched([]string{"get_issue", "delete_issue"}); !cmp.Equal(got, []string{"*_repository", "create_*"}) {
		t.Errorf("Unmatched = %q", got)
	}
	if !r.Equal(github(t)) || r.Equal(nil) || !(*authz.Rules)(nil).Equal(nil) {
		t.Error("Equal: the same rules are equal, and nil only to nil")
	}
	other, _ := authz.NewRules("github", []string{"gh:read", "gh:admin"}, []authz.ToolScope{{Pattern: "delete_*", Scopes: []string{"gh:write"}}})
	if r.Equal(other) {
		t.Error("rules with another toolScopes are equal")
	}
}
