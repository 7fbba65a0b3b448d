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

// swap is phase two of a tool sync, run on the loop: unregister the
// previous generation's tools and register the next ones, all or nothing.
// When the registry refuses one, the next tools registered so far are
// removed and the previous ones restored.
//
// The status names the next tools before the registry changes: whoever
// wakes on the registry's change and reads the status sees them.
func (s *Supervisor) swap(g *generation, next []Tool) error {
	s.mu.Lock()
	s.status.HiddenTools = int(g.hidden.Load())
	s.mu.Unlock()
	names := make([]string, len(next))
	for i, t := range next {
		names[i] = t.Name
	}
	s.setToolNames(names)
	if rp, ok := s.cfg.Registry.(Replacer); ok {
		oldTools := make([]Tool, len(s.published))
		for i, p := range s.published {
			oldTools[i] = p.tool
		}
		uns, err := rp.Replace(oldTools, next)
		if err != nil {
			s.setTools()
			return fmt.Errorf("register tools: %w", err)
		}
		s.published = make([]published, len(next))
		for i, t := range next {
			s.published[i] = published{t, uns[i]}
		}
		s.setTools()
		return nil
	}
	old := s.published
	for _, p := range old {
		p.unregister()
	}
	added := make([]published, 0, len(next))
	for _, t := range next {
		un, err := s.cfg.Registry.Register(t)
		if err != nil {
			for _, p := range added {
				p.unregister()
			}
			s.published = s.published[:0:0]
			for _, p := range old {
				un, rerr := s.cfg.Registry.Register(p.tool)
				if rerr != nil {
					s.cfg.Logger.Error("tool dropped: the registry refused to restore it after a failed swap; use a registry that implements conn.Replacer",
						"server", s.cfg.Name, "generation", g.id, "tool", p.tool.Name, "err", rerr)
					continue
				}
				s.published = append(s.published, published{p.tool, un})
			}
			s.setTools()
			return fmt.Errorf("register tool %q: %w", t.Name, err)
		}
		added = append(added, published{t, un})
	}
	s.published = added
	s.setTools()
	return nil
}

// unpublish unregisters every tool of the supervisor.
func (s *Supervisor) unpublish() {
	s.dropCatalog()
	s.setToolNames(nil) // before the registry changes, as in swap
	for _, p := range s.published {
		p.unregister()
	}
	s.published = nil
	s.setTools()
}

// setTools sets the status's tools to the published ones.
func (s *Supervisor) setTools() {
	names := make([]string, len(s.published))
	for i, p := range s.published {
		names[i] = p.tool.Name
	}
	s.setToolNames(names)
}

func (s *Supervisor) setToolNames(names []string) {
	s.mu.Lock()
	s.status.Tools = names
	s.mu.Unlock()
}
