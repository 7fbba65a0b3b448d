package broadcast_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpfsm/mcpfsm/internal/broadcast"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Every waiter of a change wakes once; a waiter after it waits for the
// next one; a Notify nobody waits for costs nothing and wakes no later
// waiter.
func TestSignal(t *testing.T) {
	var s broadcast.Signal
	s.Notify() // nobody waits
	a, b := s.C(), s.C()
	if a != b {
		t.Fatal("two waiters of one change got different channels")
	}
	if closed(a) {
		t.Fatal("the channel is closed before any change")
	}
	s.Notify()
	if !closed(a) {
		t.Fatal("Notify did not close the waiters' channel")
	}
	c := s.C()
	if closed(c) {
		t.Fatal("a waiter after the change sees it")
	}
	s.Notify()
	if !closed(c) {
		t.Fatal("the second change did not wake its waiter")
	}
}
