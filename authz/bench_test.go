package authz_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/authz"
)

// BenchmarkAllow is the rule check of one call: no rules (a nil *Rules,
// the floor), allowScopes only, and allowScopes with five toolScopes
// patterns of which the tool matches the last, for a caller with four
// scopes.
func BenchmarkAllow(b *testing.B) {
	c := authz.Caller{Subject: "alice", Scopes: []string{"openid", "profile", "gh:read", "gh:admin"}}
	var tools []authz.ToolScope
	for _, p := range []string{"delete_*", "create_*", "*_secret", "admin_*", "get_*"} {
		tools = append(tools, authz.ToolScope{Pattern: p, Scopes: []string{"gh:write", "gh:admin"}})
	}
	allow, _ := authz.NewRules("gh", []string{"gh:read"}, nil)
	both, _ := authz.NewRules("gh", []string{"gh:read"}, tools)
	for _, bc := range []struct {
		name string
		r    *authz.Rules
	}{{"none", nil}, {"allowScopes", allow}, {"toolScopes=5", both}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if ok, _ := bc.r.Allow(c, authz.Tool, "get_issue"); !ok {
					b.Fatal("refused")
				}
			}
		})
	}
}

// BenchmarkLimiter is the rate limit's count of one call: no limit (a
// nil *Limiter, the floor), one caller, 1000 callers in turn, and
// callers on every core at once.
func BenchmarkLimiter(b *testing.B) {
	clk := clock.NewMock()
	rate := authz.Rate{N: authz.MaxRateN, Per: time.Second}
	callers := make([]authz.Caller, 1000)
	for i := range callers {
		callers[i] = authz.Caller{Subject: fmt.Sprint("c", i)}
	}
	b.Run("none", func(b *testing.B) {
		var l *authz.Limiter
		b.ReportAllocs()
		for b.Loop() {
			_ = l.Allow(callers[0])
		}
	})
	b.Run("callers=1", func(b *testing.B) {
		// A fresh limiter every 500,000 calls: the mock clock stands still,
		// and a bucket of MaxRateN would run dry, timing refusals.
		var l *authz.Limiter
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if i%500_000 == 0 {
				l = authz.NewLimiter("s", rate, clk)
			}
			if l.Allow(callers[0]) != nil {
				b.Fatal("refused")
			}
			i++
		}
	})
	b.Run("callers=1000", func(b *testing.B) {
		l := authz.NewLimiter("s", rate, clk)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			_ = l.Allow(callers[i%len(callers)])
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		l := authz.NewLimiter("s", authz.Rate{N: authz.MaxRateN, Per: time.Millisecond}, clock.New())
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				_ = l.Allow(callers[i%len(callers)])
				i++
			}
		})
	})
}

// BenchmarkTallyAdd is the console's count of one request.
func BenchmarkTallyAdd(b *testing.B) {
	tl := authz.NewTally(clock.NewMock())
	c := authz.Caller{Subject: "alice"}
	b.ReportAllocs()
	for b.Loop() {
		tl.Add("gh", c, authz.Allowed)
	}
}
