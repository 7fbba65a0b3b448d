package conn

import "fmt"

// publisher puts one supervisor's tools in its [Registry] and its server's
// listing in its [Catalog], and takes them out again. It owns the list of
// what it registered. The supervisor's loop is its only caller, one call
// at a time, so it needs no lock; setNames, which it calls before and
// after every change of the registry, is the supervisor's, and takes the
// supervisor's status lock. It logs nothing: what it could not restore it
// returns to the supervisor, which logs it.
type publisher struct {
	server   string
	registry Registry
	catalog  *Catalog       // nil: Config.Catalog is not set
	setNames func([]string) // sets the status's tool names
	tools    []published    // what the registry holds of this supervisor
}

type published struct {
	tool       Tool
	unregister func()
}

// unrestored is a tool of the previous listing that the registry refused
// to take back after a failed swap.
type unrestored struct {
	tool Tool
	err  error
}

// swap is phase two of a tool sync: unregister the previous generation's
// tools and register the next ones, all or nothing. When the registry
// refuses one, the next tools registered so far are removed and the
// previous ones restored; those the registry refuses to take back are
// returned in lost.
//
// The status names the next tools before the registry changes: whoever
// wakes on the registry's change and reads the status sees them.
func (p *publisher) swap(next []Tool) (lost []unrestored, err error) {
	names := make([]string, len(next))
	for i, t := range next {
		names[i] = t.Name
	}
	p.setNames(names)
	if rp, ok := p.registry.(Replacer); ok {
		oldTools := make([]Tool, len(p.tools))
		for i, pt := range p.tools {
			oldTools[i] = pt.tool
		}
		uns, err := rp.Replace(oldTools, next)
		if err != nil {
			p.setTools()
			return nil, fmt.Errorf("register tools: %w", err)
		}
		p.tools = make([]published, len(next))
		for i, t := range next {
			p.tools[i] = published{t, uns[i]}
		}
		p.setTools()
		return nil, nil
	}
	old := p.tools
	for _, pt := range old {
		pt.unregister()
	}
	added := make([]published, 0, len(next))
	for _, t := range next {
		un, err := p.registry.Register(t)
		if err != nil {
			for _, pt := range added {
				pt.unregister()
			}
			p.tools = p.tools[:0:0]
			for _, pt := range old {
				un, rerr := p.registry.Register(pt.tool)
				if rerr != nil {
					lost = append(lost, unrestored{pt.tool, rerr})
					continue
				}
				p.tools = append(p.tools, published{pt.tool, un})
			}
			p.setTools()
			return lost, fmt.Errorf("register tool %q: %w", t.Name, err)
		}
		added = append(added, published{t, un})
	}
	p.tools = added
	p.setTools()
	return nil, nil
}

// unpublish drops the server's catalog listing and unregisters every tool.
func (p *publisher) unpublish() {
	p.dropCatalog()
	p.setNames(nil) // before the registry changes, as in swap
	for _, pt := range p.tools {
		pt.unregister()
	}
	p.tools = nil
	p.setTools()
}

// setTools sets the status's tools to the published ones.
func (p *publisher) setTools() {
	names := make([]string, len(p.tools))
	for i, pt := range p.tools {
		names[i] = pt.tool.Name
	}
	p.setNames(names)
}

// publishCatalog swaps in the server's listing, as [Catalog.publish].
func (p *publisher) publishCatalog(cat *serverCatalog) {
	if p.catalog != nil {
		p.catalog.publish(p.server, cat)
	}
}

// publishCatalogIf swaps in a re-listed catalog unless current reports
// that its generation was retired while it listed. The check and the swap
// hold the catalog's lock, and the drop at exhaustion takes it too, so a
// stale listing never follows a drop.
func (p *publisher) publishCatalogIf(cat *serverCatalog, current func() bool) {
	p.catalog.shelf.Put(p.server, cat, current)
}

// dropCatalog removes the server's listing (at exhaustion and disposal).
func (p *publisher) dropCatalog() {
	if p.catalog != nil {
		p.catalog.publish(p.server, nil)
	}
}
