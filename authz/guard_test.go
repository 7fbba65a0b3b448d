package authz_test

import (
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/authz"
)

// TestGuardCheck: the rules decide first, and a denied call spends
// none of the caller's rate.
func TestGuardCheck(t *testing.T) {
	p := authz.Guard{Rules: github(t), Limiter: authz.NewLimiter("github", authz.Rate{N: 1, Per: time.Minute}, clock.NewMock())}
	reader := authz.Caller{Subject: "alice", Scopes: []string{"gh:read"}}
	if v, err := p.Check(reader, authz.Tool, "delete_issue"); v != authz.Denied || !errors.Is(err, authz.ErrDenied) {
		t.Errorf("a missing scope: %v, %v", v, err)
	}
	if v, err := p.Check(reader, authz.Tool, "get_issue"); v != authz.Allowed || err != nil {
		t.Errorf("the first allowed call: %v, %v (a denied call spent the rate?)", v, err)
	}
	if v, err := p.Check(reader, authz.Tool, "get_issue"); v != authz.Limited || !errors.Is(err, authz.ErrRateLimited) {
		t.Errorf("past the rate: %v, %v", v, err)
	}
	if v, err := (authz.Guard{}).Check(authz.Caller{}, authz.Resource, "x://y"); v != authz.Allowed || err != nil {
		t.Errorf("no guard: %v, %v", v, err)
	}
}
