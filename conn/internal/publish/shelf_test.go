package publish

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// owner and listing of the test shelves.
type (
	testOwner   struct{ id int }
	testListing struct{ entries []string }
	testShelf   = Shelf[*testOwner, *testListing]
)

func entries(s *testShelf) []string {
	return Collect(s, func(l *testListing) []string { return l.entries })
}

// A listing is put and dropped whole, only for a reserved server, each
// change announced once; Collect goes in server order and skips servers
// with nothing listed.
func TestShelfPutDrop(t *testing.T) {
	var s testShelf
	s.Put("b", &testListing{[]string{"b1"}}, nil) // not reserved: ignored
	if got := entries(&s); len(got) != 0 {
		t.Fatalf("a Put for an unreserved server listed %v", got)
	}
	ownerA, ownerB := &testOwner{1}, &testOwner{2}
	releaseB, err := s.Reserve("b", ownerB)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseB()
	releaseA, err := s.Reserve("a", ownerA)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseA()
	if o, ok := s.Owner("a"); !ok || o != ownerA {
		t.Errorf("Owner(a) = %v, %v; want %v", o, ok, ownerA)
	}
	if _, ok := s.Owner("c"); ok {
		t.Error("Owner of an unreserved server")
	}
	ch := s.Changed()
	s.Drop("a") // nothing listed yet: no change
	if closedNow(ch) {
		t.Error("dropping nothing announced a change")
	}
	s.Put("b", &testListing{[]string{"b1", "b2"}}, nil)
	if !closedNow(ch) {
		t.Error("Put did not announce its change")
	}
	s.Put("a", &testListing{[]string{"a1"}}, nil)
	if diff := cmp.Diff([]string{"a1", "b1", "b2"}, entries(&s)); diff != "" {
		t.Errorf("Collect (-want +got):\n%s", diff)
	}
	ch = s.Changed()
	s.Put("b", &testListing{[]string{"b3"}}, nil)
	if diff := cmp.Diff([]string{"a1", "b3"}, entries(&s)); diff != "" || !closedNow(ch) {
		t.Errorf("after a swap, announced %v (-want +got):\n%s", closedNow(ch), diff)
	}
	ch = s.Changed()
	s.Drop("a")
	if diff := cmp.Diff([]string{"b3"}, entries(&s)); diff != "" || !closedNow(ch) {
		t.Errorf("after a drop, announced %v (-want +got):\n%s", closedNow(ch), diff)
	}
}

// Put's check runs under the lock and, when it says the listing is no
// longer current, nothing changes.
func TestShelfPutStill(t *testing.T) {
	var s testShelf
	release, err := s.Reserve("a", &testOwner{1})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	s.Put("a", &testListing{[]string{"old"}}, nil)
	ch := s.Changed()
	s.Put("a", &testListing{[]string{"stale"}}, func() bool {
		if s.mu.TryLock() {
			s.mu.Unlock()
			t.Error("the check ran without the shelf's lock")
		}
		return false
	})
	if diff := cmp.Diff([]string{"old"}, entries(&s)); diff != "" || closedNow(ch) {
		t.Errorf("a stale Put: announced %v (-want +got):\n%s", closedNow(ch), diff)
	}
	s.Put("a", &testListing{[]string{"new"}}, func() bool { return true })
	if diff := cmp.Diff([]string{"new"}, entries(&s)); diff != "" || !closedNow(ch) {
		t.Errorf("a current Put: announced %v (-want +got):\n%s", closedNow(ch), diff)
	}
}

// A server is reserved once at a time; its release takes its listing
// along (a change only if something was listed), and a stale release
// leaves the next reservation alone.
func TestShelfReserve(t *testing.T) {
	var s testShelf
	release, err := s.Reserve("a", &testOwner{1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve("a", &testOwner{2}); !errors.Is(err, ErrReserved) {
		t.Errorf("Reserve while held = %v, want ErrReserved", err)
	}
	ch := s.Changed()
	release()
	if closedNow(ch) {
		t.Error("releasing a server with nothing listed announced a change")
	}
	owner2 := &testOwner{2}
	release2, err := s.Reserve("a", owner2)
	if err != nil {
		t.Fatalf("Reserve after release: %v", err)
	}
	s.Put("a", &testListing{[]string{"a1"}}, nil)
	ch = s.Changed()
	release() // stale
	if o, ok := s.Owner("a"); !ok || o != owner2 || closedNow(ch) {
		t.Errorf("after a stale release: owner %v, %v, announced %v; want %v kept quietly", o, ok, closedNow(ch), owner2)
	}
	release2()
	if got := entries(&s); len(got) != 0 || !closedNow(ch) {
		t.Errorf("after the release: listed %v, announced %v; want nothing listed, announced", got, closedNow(ch))
	}
	if _, ok := s.Owner("a"); ok {
		t.Error("the server is still reserved after its release")
	}
}
