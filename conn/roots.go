//lint:file-ignore SA1019 roots are deprecated upstream (SEP-2577) but still served; the supervisor keeps them across generations.

package conn

import (
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rootSet is the host's roots: every generation's client starts with them,
// and a change reaches the live client, whose sessions the SDK then sends
// notifications/roots/list_changed.
type rootSet struct {
	change sync.Mutex // serializes SetRoots, so clients see changes in order

	mu     sync.Mutex
	roots  []*mcp.Root
	client *mcp.Client // the newest generation's; older ones are retired
}

// attach gives a new generation's client the current roots, before it
// connects (so no notification is sent), and makes it the client later
// changes go to.
func (r *rootSet) attach(c *mcp.Client) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.client = c
	if len(r.roots) > 0 {
		c.AddRoots(r.roots...)
	}
}

// SetRoots replaces the roots the host offers the server (the answer to
// its roots/list requests). Every later generation starts with them; a
// live session is sent notifications/roots/list_changed when they change.
// Each root needs a URI, and no URI may appear twice. SetRoots may block
// while the notification is written (the SDK bounds that at 10 seconds);
// it never waits for the supervisor.
func (s *Supervisor) SetRoots(roots ...*mcp.Root) error {
	next, err := cloneRoots(roots)
	if err != nil {
		return fmt.Errorf("conn: SetRoots: %w", err)
	}
	seen := map[string]bool{}
	for _, r := range next {
		seen[r.URI] = true
	}
	rs := &s.ext.roots
	rs.change.Lock()
	defer rs.change.Unlock()
	rs.mu.Lock()
	old, client := rs.roots, rs.client
	rs.roots = next
	rs.mu.Unlock()
	if client == nil || sameRoots(old, next) {
		return nil
	}
	var gone []string
	for _, r := range old {
		if !seen[r.URI] {
			gone = append(gone, r.URI)
		}
	}
	// A client attached after the swap above already has next; applying it
	// again changes nothing and notifies nobody new.
	if len(gone) > 0 {
		client.RemoveRoots(gone...)
	}
	if len(next) > 0 {
		client.AddRoots(next...)
	}
	return nil
}

// Roots returns a copy of the roots set with [Supervisor.SetRoots].
func (s *Supervisor) Roots() []*mcp.Root {
	s.ext.roots.mu.Lock()
	defer s.ext.roots.mu.Unlock()
	out := make([]*mcp.Root, len(s.ext.roots.roots))
	for i, r := range s.ext.roots.roots {
		c := *r
		out[i] = &c
	}
	return out
}

// cloneRoots checks roots and copies them, so the caller's later edits
// change nothing.
func cloneRoots(roots []*mcp.Root) ([]*mcp.Root, error) {
	seen := map[string]bool{}
	out := make([]*mcp.Root, 0, len(roots))
	for i, r := range roots {
		if r == nil || r.URI == "" {
			return nil, fmt.Errorf("root %d has no URI: give every root a URI such as file:///path/to/project", i)
		}
		if seen[r.URI] {
			return nil, fmt.Errorf("URI %q appears twice: give each root once", r.URI)
		}
		seen[r.URI] = true
		c := *r
		out = append(out, &c)
	}
	return out, nil
}

func sameRoots(a, b []*mcp.Root) bool {
	return slices.EqualFunc(a, b, func(x, y *mcp.Root) bool {
		return x.URI == y.URI && x.Name == y.Name && x.Meta == nil && y.Meta == nil
	})
}
