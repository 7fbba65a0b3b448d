//lint:file-ignore SA1019 roots are deprecated upstream (SEP-2577) but still forwarded.

package front

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rootsRelay carries the front client's roots to the supervisors.
type rootsRelay struct {
	wg sync.WaitGroup // fetches in flight

	mu    sync.Mutex // serialises fetches, so the newest roots are applied last
	cur   []*mcp.Root
	known bool
}

// rootsTimeout bounds one roots/list to the front client.
const rootsTimeout = 10 * time.Second

func (f *Front) initialized(_ context.Context, req *mcp.InitializedRequest) {
	f.fetchRoots(req.Session)
}

func (f *Front) rootsChanged(_ context.Context, req *mcp.RootsListChangedRequest) {
	f.fetchRoots(req.Session)
}

// fetchRoots asks the front client ss for its roots, if it has any, and
// sets them on every supervisor, off the SDK's goroutine (a request made
// from a notification handler would wait for itself).
func (f *Front) fetchRoots(ss *mcp.ServerSession) {
	if ss == nil || f.opts.Supervisors == nil {
		return
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.RootsV2 == nil {
		return
	}
	f.roots.wg.Add(1)
	go func() {
		defer f.roots.wg.Done()
		f.roots.mu.Lock()
		defer f.roots.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), rootsTimeout)
		defer cancel()
		res, err := ss.ListRoots(ctx, nil)
		if err != nil {
			f.opts.Logger.Warn("roots of the client not read: "+err.Error()+"; the servers keep the previous roots", "err", err)
			return
		}
		f.roots.cur, f.roots.known = cloneRoots(res.Roots), true
		for _, sup := range f.opts.Supervisors() {
			if err := sup.SetRoots(res.Roots...); err != nil {
				f.opts.Logger.Warn("roots of the client not forwarded: "+err.Error(), "err", err)
			}
		}
	}()
}

// Roots returns the front client's roots as last read, and whether any
// were read. A host that starts a supervisor after the front client
// connected passes them as its conn.Config.Roots.
func (f *Front) Roots() ([]*mcp.Root, bool) {
	f.roots.mu.Lock()
	defer f.roots.mu.Unlock()
	return cloneRoots(f.roots.cur), f.roots.known
}

// wait waits for the roots fetches in flight.
func (r *rootsRelay) wait() { r.wg.Wait() }

func cloneRoots(roots []*mcp.Root) []*mcp.Root {
	out := make([]*mcp.Root, 0, len(roots))
	for _, r := range roots {
		if r != nil {
			c := *r
			out = append(out, &c)
		}
	}
	return out
}
