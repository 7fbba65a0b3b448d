package conn

import "fmt"

// swap is phase two of a tool sync, run on the loop: unregister the
// previous generation's tools and register the next ones, all or nothing.
// When the registry refuses one, the next tools registered so far are
// removed and the previous ones restored.
func (s *Supervisor) swap(g *generation, next []Tool) error {
	if rp, ok := s.cfg.Registry.(Replacer); ok {
		oldTools := make([]Tool, len(s.published))
		for i, p := range s.published {
			oldTools[i] = p.tool
		}
		uns, err := rp.Replace(oldTools, next)
		if err != nil {
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
	for _, p := range s.published {
		p.unregister()
	}
	s.published = nil
	s.setTools()
}

func (s *Supervisor) setTools() {
	names := make([]string, len(s.published))
	for i, p := range s.published {
		names[i] = p.tool.Name
	}
	s.mu.Lock()
	s.status.Tools = names
	s.mu.Unlock()
}

// listChanged handles the kick of a list_changed notification. Only the
// current established generation re-syncs now; the pending attempt keeps
// the news for after it is up, so a notification that arrives before or
// during the first connect cannot take over the attempt's strict startup
// registration.
func (s *Supervisor) listChanged() {
	if g := s.current; g != nil && s.machine.State() == Established && g.changed.Swap(false) {
		s.cfg.Logger.Info("tool list changed, re-syncing", "server", s.cfg.Name, "state", string(Established), "generation", g.id)
		s.resync(g)
	}
	if g := s.pending; g != nil && g.changed.Swap(false) {
		g.dirty = true
	}
}

// resync starts a re-sync of g, or marks one to follow the sync in flight:
// one sync at a time, and a storm of notifications costs at most one more.
func (s *Supervisor) resync(g *generation) {
	if g.syncing {
		g.dirty = true
		return
	}
	g.syncing, g.dirty = true, false
	s.workers.Add(1)
	go func() {
		defer s.workers.Done()
		ctx, cancel := withTimeout(g.ctx, s.clk, s.cfg.ConnectTimeout)
		defer cancel()
		tools, err := g.listTools(ctx)
		s.send(resyncResult{g: g, tools: tools, err: err})
	}()
}

func (s *Supervisor) resyncDone(m resyncResult) {
	g := m.g
	g.syncing = false
	if g != s.current || s.machine.State() != Established || g.down.Load() {
		// The generation was retired while it listed: whatever it fetched
		// is stale, and a failure caused by closing it is no news.
		return
	}
	if m.err != nil {
		s.cfg.Logger.Error("tool re-sync failed: "+m.err.Error()+"; the previous tools stay registered",
			"server", s.cfg.Name, "state", string(Established), "generation", g.id, "err", m.err)
	} else if err := s.swap(g, m.tools); err != nil {
		s.cfg.Logger.Error("tool re-sync failed: "+err.Error()+"; the previous tools stay registered",
			"server", s.cfg.Name, "state", string(Established), "generation", g.id, "err", err)
	}
	if g.dirty {
		s.resync(g)
	}
}
