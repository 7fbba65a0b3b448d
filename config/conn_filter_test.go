package config

import "testing"

// Conn carries the tool filter and the concurrency limit to conn.Config.
func TestConnCarriesFilterAndLimit(t *testing.T) {
	s := Server{Name: "fs", Type: TypeStdio, Command: "x", ExcludeTools: []string{"delete*"}, MaxConcurrentCalls: 3}
	c := s.Conn(nil)
	if c.MaxConcurrentCalls != 3 {
		t.Errorf("MaxConcurrentCalls = %d, want 3", c.MaxConcurrentCalls)
	}
	if c.Filter == nil || c.Filter("delete_all") || !c.Filter("read") {
		t.Errorf("Filter does not apply excludeTools [delete*]")
	}
	if (Server{Name: "fs", Type: TypeStdio, Command: "x"}).Conn(nil).Filter != nil {
		t.Error("a server without filters gets a Filter")
	}
}
