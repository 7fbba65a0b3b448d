package publish

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var cmpItems = cmp.AllowUnexported(item{})

// refusal returns the *Refused behind err, failing the test without one.
func refusal(t *testing.T, err error, why error) *Refused[item] {
	t.Helper()
	var r *Refused[item]
	if !errors.As(err, &r) || !errors.Is(err, why) {
		t.Fatalf("err = %v, want a *Refused of %v", err, why)
	}
	return r
}

// A registration is refused when its name is empty or taken, naming the
// holder; an unregister removes its own registration only, any number of
// times; Lookup and List see what is registered, List in name order.
func TestSetRegister(t *testing.T) {
	var s items
	a := item{"mcp__a__x", "a", 1}
	unA, err := s.Register(a)
	if err != nil {
		t.Fatal(err)
	}
	r := refusal(t, func() error { _, err := s.Register(item{"mcp__a__x", "b", 1}); return err }(), ErrTaken)
	if r.Name != "mcp__a__x" || r.Holder != a || r.Value.owner != "b" {
		t.Errorf("refusal = %+v, want the name, the holder %+v and the value refused", r, a)
	}
	refusal(t, func() error { _, err := s.Register(item{"", "b", 1}); return err }(), ErrEmptyName)
	unB, err := s.Register(item{"mcp__b__y", "b", 1})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]item{a, {"mcp__b__y", "b", 1}}, s.List(), cmpItems); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	unA()
	unA()
	a2 := item{"mcp__a__x", "c", 2}
	if _, err := s.Register(a2); err != nil {
		t.Fatalf("Register after unregister: %v", err)
	}
	unA() // stale: must not remove a2
	if got, ok := s.Lookup("mcp__a__x"); !ok || got != a2 {
		t.Errorf("Lookup = %+v, %v; want %+v", got, ok, a2)
	}
	unB()
	if diff := cmp.Diff([]item{a2}, s.List(), cmpItems); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if _, ok := s.Lookup("mcp__b__y"); ok {
		t.Error("Lookup finds an unregistered name")
	}
}

// Replace swaps all or nothing: a conflict with a value that stays, a
// name twice or an empty name leaves the set as it was and announces
// nothing; a value of old that was replaced meanwhile is not removed.
func TestSetReplace(t *testing.T) {
	var s items
	x1, y1 := item{"mcp__a__x", "a", 1}, item{"mcp__a__y", "a", 1}
	other := item{"mcp__b__z", "b", 1}
	if _, err := s.Replace(nil, []item{x1, y1}); err != nil {
		t.Fatal(err)
	}
	unOther, err := s.Register(other)
	if err != nil {
		t.Fatal(err)
	}
	before := s.List()
	for _, tc := range []struct {
		next []item
		why  error
		name string
	}{
		{[]item{{"mcp__a__w", "a", 2}, {"mcp__b__z", "a", 2}}, ErrTaken, "mcp__b__z"},
		{[]item{{"mcp__a__w", "a", 2}, {"mcp__a__w", "a", 2}}, ErrTwice, "mcp__a__w"},
		{[]item{{"mcp__a__w", "a", 2}, {"", "a", 2}}, ErrEmptyName, ""},
	} {
		ch := s.Changed()
		_, err := s.Replace([]item{x1, y1}, tc.next)
		if r := refusal(t, err, tc.why); r.Name != tc.name {
			t.Errorf("refused name %q, want %q", r.Name, tc.name)
		}
		if closedNow(ch) {
			t.Error("a refused Replace announced a change")
		}
		if diff := cmp.Diff(before, s.List(), cmpItems); diff != "" {
			t.Errorf("a refused Replace changed the set (-before +after):\n%s", diff)
		}
	}
	// The name of a value of old that stays (another generation holds it
	// now) is not free: y is held by generation 3, not by y1.
	y3 := item{"mcp__a__y", "a", 3}
	if _, err := s.Replace([]item{y1}, []item{y3}); err != nil {
		t.Fatal(err)
	}
	ch := s.Changed()
	x2 := item{"mcp__a__x", "a", 2}
	uns, err := s.Replace([]item{x1, y1}, []item{x2})
	if err != nil {
		t.Fatal(err)
	}
	if !closedNow(ch) {
		t.Error("Replace did not announce its change")
	}
	if diff := cmp.Diff([]item{x2, y3, other}, s.List(), cmpItems); diff != "" {
		t.Errorf("after Replace (-want +got):\n%s", diff)
	}
	if len(uns) != 1 {
		t.Fatalf("%d unregister functions, want 1", len(uns))
	}
	uns[0]()
	unOther()
	if diff := cmp.Diff([]item{y3}, s.List(), cmpItems); diff != "" {
		t.Errorf("after unregistering (-want +got):\n%s", diff)
	}
}

// Every change, and only a change, closes the channel Changed returned
// before it.
func TestSetChanged(t *testing.T) {
	var s items
	ch := s.Changed()
	un, err := s.Register(item{"mcp__a__x", "a", 1})
	if err != nil || !closedNow(ch) {
		t.Fatalf("Register: err %v, announced %v", err, closedNow(ch))
	}
	ch = s.Changed()
	if _, err := s.Register(item{"mcp__a__x", "b", 1}); err == nil || closedNow(ch) {
		t.Errorf("a refused Register: err %v, announced %v", err, closedNow(ch))
	}
	un()
	if !closedNow(ch) {
		t.Error("unregister did not announce its change")
	}
	ch = s.Changed()
	un()
	if closedNow(ch) {
		t.Error("a second unregister announced a change")
	}
}

// A server name is held until its release; a stale release does not free
// it from the next reservation.
func TestSetReserve(t *testing.T) {
	var s items
	release, err := s.Reserve("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve("a"); !errors.Is(err, ErrReserved) {
		t.Errorf("Reserve while held = %v, want ErrReserved", err)
	}
	release()
	release2, err := s.Reserve("a")
	if err != nil {
		t.Fatalf("Reserve after release: %v", err)
	}
	release()
	if _, err := s.Reserve("a"); !errors.Is(err, ErrReserved) {
		t.Errorf("Reserve after a stale release = %v, want ErrReserved", err)
	}
	release2()
	if _, err := s.Reserve("a"); err != nil {
		t.Errorf("Reserve after the release = %v", err)
	}
}

// Writers and readers at once (run with -race): each writer's swaps are
// all or nothing, so a reader sees a whole generation of its names.
func TestSetConcurrent(t *testing.T) {
	var s items
	var wg sync.WaitGroup
	for w := range 4 {
		owner := fmt.Sprint("s", w)
		wg.Go(func() {
			var old []item
			for gen := range 50 {
				next := []item{{"mcp__" + owner + "__x", owner, gen}, {"mcp__" + owner + "__y", owner, gen}}
				if _, err := s.Replace(old, next); err != nil {
					t.Error(err)
					return
				}
				old = next
			}
		})
		wg.Go(func() {
			for range 50 {
				if x, ok := s.Lookup("mcp__" + owner + "__x"); ok && x.owner != owner {
					t.Errorf("Lookup = %+v, want owner %s", x, owner)
				}
				gens := map[int]bool{}
				for _, v := range s.List() {
					if v.owner == owner {
						gens[v.gen] = true
					}
				}
				if len(gens) > 1 {
					t.Errorf("a reader saw generations %v of %s at once", gens, owner)
				}
			}
		})
	}
	wg.Wait()
	list := s.List()
	if len(list) != 8 {
		t.Fatalf("%d values after the swaps, want 8: %+v", len(list), list)
	}
	for _, v := range list {
		if v.gen != 49 {
			t.Errorf("%+v: not of the last generation", v)
		}
	}
}
