package conn

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpfsm/mcpfsm/conn/internal/bugs"
)

// listTools is phase one of a tool sync: fetch every page and build the
// whole next set of tools, or fail and change nothing.
func (g *generation) listTools(ctx context.Context) ([]Tool, error) {
	s := g.sup
	var out []Tool
	seen := map[string]bool{}
	hidden := 0
	pages := g.sess.Tools(ctx, nil)
	if bugs.PublishBeforeListed {
		pages = bugs.FirstPage(ctx, g.sess)
	}
	for raw, err := range pages {
		if err != nil {
			return nil, fmt.Errorf("list tools: %w", causeOf(ctx, err))
		}
		if raw == nil {
			continue
		}
		if s.cfg.Filter != nil && !s.cfg.Filter(raw.Name) {
			hidden++
			continue
		}
		if seen[raw.Name] {
			return nil, fmt.Errorf("%w: tool %q is listed twice", ErrInvalidToolList, raw.Name)
		}
		if len(out) == MaxTools {
			return nil, fmt.Errorf("%w: more than %d tools", ErrInvalidToolList, MaxTools)
		}
		seen[raw.Name] = true
		out = append(out, Tool{Name: PublicToolName(s.cfg.Name, raw.Name), Server: s.cfg.Name, Raw: raw, gen: g})
	}
	g.hidden.Store(int32(hidden))
	slices.SortFunc(out, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(out); i++ {
		if out[i].Name == out[i-1].Name {
			return nil, fmt.Errorf("%w: tools %q and %q share the public name %q",
				ErrInvalidToolList, out[i-1].Raw.Name, out[i].Raw.Name, out[i].Name)
		}
	}
	return out, nil
}

// signalChanged is the SDK's ToolListChangedHandler.
func (g *generation) signalChanged() {
	g.changed.Store(true)
	g.sup.kick()
}
