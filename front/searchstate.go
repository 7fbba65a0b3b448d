package front

import (
	"encoding/json"
	"maps"
	"slices"
	"sync"

	"github.com/mcpfsm/mcpfsm/toolsearch"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// searchState is a client's searchable tools in search mode: every tool
// its caller may see (served name -> definition), and the index over
// them, built at the first search after a change.
type searchState struct {
	mu    sync.Mutex
	defs  map[string]json.RawMessage
	tools map[string]*mcp.Tool
	ix    *toolsearch.Index // nil until built; closed when replaced
	ixErr error
}

// drop closes the index; s.mu is held.
func (s *searchState) drop() {
	if s.ix != nil {
		_ = s.ix.Close()
	}
	s.ix, s.ixErr = nil, nil
}

// close releases the index, once the client ends.
func (s *searchState) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop()
	s.defs, s.tools = nil, nil
}

// search runs q over the searchable tools, building the index first if
// they changed. It holds s.mu throughout: a search never sees an index
// closed under it.
func (s *searchState) search(q, server string, limit int, keep func(name string) bool) ([]*mcp.Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ix == nil && s.ixErr == nil {
		docs := make([]toolsearch.Doc, 0, len(s.tools))
		for _, name := range slices.Sorted(maps.Keys(s.tools)) {
			docs = append(docs, toolsearch.DocOf(serverOf(s.tools[name].Name), name, s.tools[name]))
		}
		s.ix, s.ixErr = toolsearch.New(docs)
	}
	if s.ixErr != nil {
		return nil, s.ixErr
	}
	hits, err := s.ix.Search(q, server, 0)
	if err != nil {
		return nil, err
	}
	var out []*mcp.Tool
	for _, h := range hits {
		if len(out) == limit {
			break
		}
		if keep(h.Name) {
			out = append(out, s.tools[h.Name])
		}
	}
	return out, nil
}
