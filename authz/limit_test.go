package authz_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/authz"
)

func TestParseRate(t *testing.T) {
	for s, want := range map[string]authz.Rate{
		"5/s": {5, time.Second}, "100/m": {100, time.Minute}, "1000/h": {1000, time.Hour}, "1000000/s": {1000000, time.Second},
	} {
		got, err := authz.ParseRate(s)
		if err != nil || got != want || got.String() != s {
			t.Errorf("ParseRate(%q) = %v (%s), %v; want %v", s, got, got, err, want)
		}
	}
	for _, s := range []string{"", "5", "5/d", "5/sec", "0/s", "-1/s", "1.5/s", "05/s", "+5/s", "1000001/s", "five/s", "5/S"} {
		if _, err := authz.ParseRate(s); err == nil {
			t.Errorf("ParseRate(%q) accepted", s)
		}
	}
}

// TestLimiterBurstThenRefill: "5/s" lets 5 calls of one caller through at
// once and refuses the sixth, saying when the next is let through, while
// another caller still passes; one call is let through every 200 ms after.
func TestLimiterBurstThenRefill(t *testing.T) {
	clk := clock.NewMock()
	l := authz.NewLimiter("gh", authz.Rate{N: 5, Per: time.Second}, clk)
	alice, bob := authz.Caller{Subject: "alice"}, authz.Caller{Subject: "bob"}
	for i := range 5 {
		if err := l.Allow(alice); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	err := l.Allow(alice)
	var le *authz.LimitError
	if !errors.As(err, &le) || !errors.Is(err, authz.ErrRateLimited) {
		t.Fatalf("sixth call: %v, want a *LimitError", err)
	}
	if want := `rate limit 5/s of server "gh" reached for this caller; try again in 200ms`; err.Error() != want {
		t.Errorf("refusal:\n got %s\nwant %s", err, want)
	}
	if err := l.Allow(bob); err != nil {
		t.Errorf("another caller was refused: %v", err)
	}
	clk.Add(150 * time.Millisecond)
	if err := l.Allow(alice); !errors.As(err, &le) || le.RetryAfter != 50*time.Millisecond {
		t.Errorf("150 ms later: %v, want a wait of 50ms", err)
	}
	clk.Add(50 * time.Millisecond)
	if err := l.Allow(alice); err != nil {
		t.Errorf("after the wait: %v", err)
	}
	if err := l.Allow(alice); err == nil {
		t.Error("a second call in the same 200 ms passed")
	}
}

// TestLimiterOperatorHasItsOwnBucket: an OAuth subject spelled like the
// static token's does not spend the operator's calls.
func TestLimiterOperatorHasItsOwnBucket(t *testing.T) {
	clk := clock.NewMock()
	l := authz.NewLimiter("s", authz.Rate{N: 1, Per: time.Hour}, clk)
	if err := l.Allow(authz.Caller{Subject: "token"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Allow(authz.Caller{Subject: "token", Operator: true}); err != nil {
		t.Errorf("the operator shares its bucket with an OAuth subject \"token\": %v", err)
	}
	err := l.Allow(authz.Caller{Subject: "token"})
	var le *authz.LimitError
	if !errors.As(err, &le) || le.RetryAfter != time.Hour {
		t.Errorf("second call of 1/h: %v, want a wait of 1h", err)
	}
}

// TestLimiterDropsIdleCallers: memory holds the callers of the last
// period or two, and dropping a bucket changes no decision.
func TestLimiterDropsIdleCallers(t *testing.T) {
	clk := clock.NewMock()
	l := authz.NewLimiter("s", authz.Rate{N: 2, Per: time.Minute}, clk)
	for i := range 1000 {
		if err := l.Allow(authz.Caller{Subject: fmt.Sprint("c", i)}); err != nil {
			t.Fatal(err)
		}
	}
	steady := authz.Caller{Subject: "steady"}
	for range 2 {
		if err := l.Allow(steady); err != nil {
			t.Fatal(err)
		}
	}
	if n := l.Callers(); n != 1001 {
		t.Fatalf("Callers = %d, want 1001", n)
	}
	clk.Add(30 * time.Second)
	spender := authz.Caller{Subject: "spender"}
	for range 2 {
		if err := l.Allow(spender); err != nil {
			t.Fatal(err)
		}
	}
	clk.Add(29 * time.Second)
	l.Allow(steady) // refused or not, it is a call of a caller still active
	if n := l.Callers(); n != 1002 {
		t.Errorf("before a period passed: Callers = %d, want 1002", n)
	}
	clk.Add(time.Second)
	l.Allow(steady)
	if n := l.Callers(); n != 2 {
		t.Errorf("a period later: Callers = %d, want the 2 callers of the last period", n)
	}
	// spender's bucket, half refilled, was kept: one call, not two.
	if err := l.Allow(spender); err != nil {
		t.Errorf("spender's call half a period after its burst: %v", err)
	}
	if err := l.Allow(spender); err == nil {
		t.Error("spender got a second call half a period after its burst: its bucket was dropped before it was full")
	}
	// c0's bucket was dropped full: it gets its whole burst again, as it
	// would have from a kept bucket.
	for i := range 2 {
		if err := l.Allow(authz.Caller{Subject: "c0"}); err != nil {
			t.Errorf("c0's call %d after its bucket was dropped: %v", i+1, err)
		}
	}
	if err := l.Allow(authz.Caller{Subject: "c0"}); err == nil {
		t.Error("c0 got more than its burst after its bucket was dropped")
	}
}

func TestNilLimiter(t *testing.T) {
	l := authz.NewLimiter("s", authz.Rate{}, nil)
	if l != nil || l.Allow(authz.Caller{}) != nil || l.Rate() != (authz.Rate{}) || l.Callers() != 0 {
		t.Error("the zero Rate is not a nil limiter letting everything through")
	}
}
