package authz_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/authz"
)

// TestTallyLastHour: counts are per server and caller, and a request
// leaves the counts an hour after its minute.
func TestTallyLastHour(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 12, 1, 10, 0, 30, 0, time.UTC))
	tl := authz.NewTally(clk)
	alice, op := authz.Caller{Subject: "alice"}, authz.Caller{Subject: "token", Operator: true}
	tl.Add("gh", alice, authz.Allowed)
	tl.Add("gh", alice, authz.Denied)
	clk.Add(10 * time.Minute)
	tl.Add("gh", alice, authz.Limited)
	tl.Add("gh", alice, authz.Allowed)
	tl.Add("gh", op, authz.Allowed)
	tl.Add("fs", alice, authz.Allowed)
	want := []authz.Count{
		{Server: "fs", Subject: "alice", Allowed: 1},
		{Server: "gh", Subject: "token", Operator: true, Allowed: 1},
		{Server: "gh", Subject: "alice", Allowed: 2, Denied: 1, Limited: 1},
	}
	if diff := cmp.Diff(want, tl.Counts("")); diff != "" {
		t.Errorf("Counts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want[1:], tl.Counts("gh")); diff != "" {
		t.Errorf("Counts(gh) (-want +got):\n%s", diff)
	}
	if got := want[2].Refused(); got != 2 {
		t.Errorf("Refused = %d", got)
	}
	// 10:59:59: the first minute is still in the hour; 11:00:00 it is not.
	clk.Set(time.Date(2026, 12, 1, 10, 59, 59, 0, time.UTC))
	if got := tl.Counts("gh")[1]; got.Allowed != 2 || got.Denied != 1 {
		t.Errorf("at 10:59:59: %+v", got)
	}
	clk.Set(time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC))
	if got := tl.Counts("gh")[1]; got.Allowed != 1 || got.Denied != 0 || got.Limited != 1 {
		t.Errorf("at 11:00: %+v, want only the requests of 10:10", got)
	}
	// A bucket reused a ring later holds only its new minute.
	tl.Add("gh", alice, authz.Denied)
	if got := tl.Counts("gh")[1]; got.Allowed != 1 || got.Denied != 1 || got.Limited != 1 {
		t.Errorf("after a request at 11:00: %+v", got)
	}
	clk.Add(2 * time.Hour)
	if got := tl.Counts(""); len(got) != 0 {
		t.Errorf("two hours later: %+v, want nothing", got)
	}
}

// TestTallyIsBounded: callers idle for an hour are forgotten, and the
// subjects counted apart per server are bounded.
func TestTallyIsBounded(t *testing.T) {
	clk := clock.NewMock()
	tl := authz.NewTally(clk)
	for i := range authz.MaxTallySubjects + 5 {
		tl.Add("s", authz.Caller{Subject: fmt.Sprintf("c%04d", i)}, authz.Allowed)
	}
	got := tl.Counts("s")
	if len(got) != authz.MaxTallySubjects+1 {
		t.Fatalf("%d counts, want %d subjects and one of the others", len(got), authz.MaxTallySubjects)
	}
	if last := got[len(got)-1]; !last.Others || last.Allowed != 5 {
		t.Errorf("the others' count: %+v, want 5 calls", last)
	}
	clk.Add(time.Hour)
	tl.Add("s", authz.Caller{Subject: "new"}, authz.Allowed)
	if got := tl.Counts("s"); len(got) != 1 || got[0].Subject != "new" || got[0].Others {
		t.Errorf("an hour later: %+v, want the new caller alone, counted apart", got)
	}
}
