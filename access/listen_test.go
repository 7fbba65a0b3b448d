package access

import (
	"errors"
	"net"
	"strings"
	"testing"
)

func TestListenLoopbackOnlyWithoutAuth(t *testing.T) {
	open, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	withToken, err := New(Config{Token: goodToken})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr    string
		rule    *Rule
		refused bool
	}{
		{"127.0.0.1:0", open, false},
		{"localhost:0", open, false},
		{"[::1]:0", open, false},
		{"0.0.0.0:0", open, true},
		{":0", open, true},
		{"[::]:0", open, true},
		{"0.0.0.0:0", withToken, false},
		{":0", withToken, false},
	} {
		ln, err := tc.rule.Listen(tc.addr)
		if ln != nil {
			ln.Close()
		}
		if tc.refused {
			if !errors.Is(err, ErrNeedAuth) {
				t.Errorf("Listen(%q) = %v, want ErrNeedAuth", tc.addr, err)
			} else if !strings.Contains(err.Error(), "set MCPFSM_TOKEN or -token-file, or listen on 127.0.0.1:PORT") {
				t.Errorf("Listen(%q) = %v, want the fix named", tc.addr, err)
			}
			continue
		}
		var oe *net.OpError
		if errors.As(err, &oe) && strings.Contains(tc.addr, "::1") {
			t.Logf("Listen(%q): %v (no IPv6 here)", tc.addr, err)
			continue
		}
		if err != nil {
			t.Errorf("Listen(%q): %v", tc.addr, err)
		}
	}
	if _, err := open.Listen("8080"); err == nil || !strings.Contains(err.Error(), "HOST:PORT") {
		t.Errorf("Listen without a port: %v, want an error naming HOST:PORT", err)
	}
}

// TestListenBoundsConnections: with MaxConns 1, a second connection is
// not accepted while the first is open, and is once it closes.
func TestListenBoundsConnections(t *testing.T) {
	r, err := New(Config{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := r.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	lim := ln.(*limited)
	c1, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	s1, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(lim.sem); n != 1 {
		t.Fatalf("after one accept, %d slots taken, want 1", n)
	}
	c2, err := net.Dial("tcp", ln.Addr().String()) // waits in the backlog
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	s1.Close()
	s1.Close() // a second Close must not free a second slot
	s2, ok := <-accepted
	if !ok {
		t.Fatal("the second connection was not accepted after the first closed")
	}
	if n := len(lim.sem); n != 1 {
		t.Errorf("with the second connection open, %d slots taken, want 1", n)
	}
	// Full again: Accept waits, and returns ErrClosed when the listener
	// closes rather than hanging.
	done := make(chan error, 1)
	go func() { _, err := ln.Accept(); done <- err }()
	ln.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept on a full, closed listener: %v, want net.ErrClosed", err)
	}
	s2.Close()
	if n := len(lim.sem); n != 0 {
		t.Errorf("after both closed, %d slots taken, want 0", n)
	}
}
