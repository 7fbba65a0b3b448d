package slots

import (
	"errors"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every bound holds, and a slot given back (once, however often it is
// given) is free again.
func TestBounds(t *testing.T) {
	var s Slots
	s.SetDefault(2)
	a, err := s.Session("alice", 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Session("alice", 3, 2); err != nil {
		t.Fatal(err)
	}
	var bound *Bound
	if _, err := s.Session("alice", 3, 2); !errors.As(err, &bound) {
		t.Fatalf("alice's third session with a share of 2: %v", err)
	}
	if _, err := s.Session("bob", 3, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Session("carol", 3, 2); !errors.As(err, &bound) {
		t.Fatalf("a fourth session with a bound of 3: %v", err)
	}
	a()
	a()
	if n, _ := s.Counts(); n != 2 {
		t.Fatalf("%d sessions after one was given back twice, want 2", n)
	}
	if _, err := s.Session("carol", 3, 2); err != nil {
		t.Fatalf("a session in the freed slot: %v", err)
	}
	i1, _ := s.Instance("fs", 0)
	if _, err := s.Instance("fs", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Instance("fs", 0); !errors.As(err, &bound) {
		t.Fatalf("a third instance with the default bound of 2: %v", err)
	}
	if _, err := s.Instance("other", 1); err != nil {
		t.Fatal(err)
	}
	i1()
	if _, n := s.Counts(); n["fs"] != 1 || n["other"] != 1 {
		t.Fatalf("instances %v", n)
	}
}
