package conn

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/mcpfsm/mcpfsm/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listCatalog is phase one of a catalog sync: list what the server
// advertises, every page, or fail and change nothing.
func (g *generation) listCatalog(ctx context.Context) (*serverCatalog, error) {
	s := g.sup
	caps := g.sess.InitializeResult().Capabilities
	cat := &serverCatalog{}
	if caps != nil && caps.Resources != nil {
		var err error
		if cat.resources, err = listAll(ctx, "resources", g.sess.Resources(ctx, nil), func(r *mcp.Resource) (Resource, string) {
			return Resource{Server: s.cfg.Name, Raw: r, sup: s}, r.URI
		}); err != nil {
			return nil, err
		}
		if cat.templates, err = listAll(ctx, "resource templates", g.sess.ResourceTemplates(ctx, nil), func(r *mcp.ResourceTemplate) (ResourceTemplate, string) {
			return ResourceTemplate{Server: s.cfg.Name, Raw: r}, r.URITemplate
		}); err != nil {
			return nil, err
		}
	}
	if caps != nil && caps.Prompts != nil {
		var err error
		if cat.prompts, err = listAll(ctx, "prompts", g.sess.Prompts(ctx, nil), func(p *mcp.Prompt) (Prompt, string) {
			return Prompt{Name: PublicToolName(s.cfg.Name, p.Name), Server: s.cfg.Name, Raw: p, sup: s}, p.Name
		}); err != nil {
			return nil, err
		}
		if s.cfg.Filter != nil {
			cat.prompts = slices.DeleteFunc(cat.prompts, func(p Prompt) bool { return !s.cfg.Filter(p.Raw.Name) })
		}
		slices.SortFunc(cat.prompts, func(a, b Prompt) int { return strings.Compare(a.Name, b.Name) })
		for i := 1; i < len(cat.prompts); i++ {
			if cat.prompts[i].Name == cat.prompts[i-1].Name {
				return nil, fmt.Errorf("list prompts: prompts %q and %q share the public name %q",
					cat.prompts[i-1].Raw.Name, cat.prompts[i].Raw.Name, cat.prompts[i].Name)
			}
		}
	}
	return cat, nil
}

// listAll drains a paginated listing into entries sorted by key, refusing
// duplicate keys and lists longer than MaxTools.
func listAll[R any, T any](ctx context.Context, what string, seq iter.Seq2[*R, error], mk func(*R) (T, string)) ([]T, error) {
	type keyed struct {
		key string
		v   T
	}
	var out []keyed
	seen := map[string]bool{}
	for raw, err := range seq {
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", what, causeOf(ctx, err))
		}
		if raw == nil {
			continue
		}
		v, key := mk(raw)
		if seen[key] {
			return nil, fmt.Errorf("list %s: %q is listed twice", what, key)
		}
		if len(out) == MaxTools {
			return nil, fmt.Errorf("list %s: more than %d", what, MaxTools)
		}
		seen[key] = true
		out = append(out, keyed{key, v})
	}
	slices.SortFunc(out, func(a, b keyed) int { return cmp.Compare(a.key, b.key) })
	vs := make([]T, len(out))
	for i, k := range out {
		vs[i] = k.v
	}
	return vs, nil
}

// catalogChanged handles a resources or prompts list_changed of g: the
// established generation re-lists now (one listing at a time; a storm
// costs at most one more), a generation still connecting re-lists once it
// is established.
func (g *generation) catalogChanged() {
	s := g.sup
	if s.cfg.Catalog == nil {
		return
	}
	g.ext.mu.Lock()
	defer g.ext.mu.Unlock()
	if !g.ext.live || g.ext.syncing {
		g.ext.more = true
		return
	}
	g.ext.syncing, g.ext.more = true, false
	// The generation's goroutine counts as a worker until its session has
	// ended, and the session cannot end while this handler runs: adding
	// one here never races the disposal's wait.
	s.workers.Add(1)
	go g.resyncCatalog()
}

func (g *generation) resyncCatalog() {
	s := g.sup
	defer s.workers.Done()
	for {
		ctx, cancel := withTimeout(g.ctx, s.clk, s.cfg.ConnectTimeout)
		cat, err := g.listCatalog(ctx)
		cancel()
		if err != nil {
			err = redact.Error(err)
			if !g.down() {
				s.cfg.Logger.Error("catalog re-sync failed: "+err.Error()+"; the previous resources and prompts stay listed",
					"server", s.cfg.Name, "generation", g.id, "err", err)
			}
		} else {
			s.publishCatalog(g, cat)
		}
		g.ext.mu.Lock()
		if !g.ext.more || g.down() {
			g.ext.syncing = false
			g.ext.mu.Unlock()
			return
		}
		g.ext.more = false
		g.ext.mu.Unlock()
	}
}

// publishCatalog swaps in a re-listed catalog unless g was retired while it
// listed. The check and the swap hold the catalog's lock, and the drop at
// exhaustion takes it too, so a stale listing never follows a drop.
func (s *Supervisor) publishCatalog(g *generation, cat *serverCatalog) {
	s.cfg.Catalog.shelf.Put(s.cfg.Name, cat, func() bool { return s.ext.live.Load() == g && !g.down() })
}
