package conn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfsm/mcpfsm/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionState is what a Supervisor keeps about the MCP session beyond its
// tools: the established generation for WithSession, the host's roots and
// resource subscriptions (re-sent to every generation), the handler
// goroutine of Config.Client and the published catalog.
type sessionState struct {
	live      atomic.Pointer[generation] // the established generation, until the next one is
	callbacks *callbacks                 // nil without Config.Client
	roots     rootSet

	subMu   sync.Mutex
	subs    []string      // resource URIs subscribed through the supervisor, in order
	subSend chan struct{} // held (buffered 1) while the list changes and the change is sent
}

// genSession is what a generation keeps beyond its tools: the catalog it
// listed at connect, the subscriptions it sent then, and the state of its
// catalog re-sync.
type genSession struct {
	listed *serverCatalog // phase one's catalog, published when the attempt succeeds
	sent   []string       // the subscriptions phase one sent
	takes  bool           // the server takes subscriptions

	mu            sync.Mutex
	live          bool // established: a list_changed re-syncs now
	syncing, more bool // a catalog re-sync runs; another must follow
}

// WithSession runs f with the session of the current established
// generation: the escape hatch to every request the SDK's
// *mcp.ClientSession offers (resources/read, prompts/get,
// completion/complete, logging/setLevel, ...). The context f gets is
// bounded by CallTimeout and cancelled when the generation is retired, like
// a tool call's; f must not keep the session beyond its return.
//
// With no established generation (connecting, during an outage, after
// exhaustion or Close) WithSession fails fast with an error matching
// [ErrUnavailable], without calling f. If the generation is lost while f
// runs, the error f returns is wrapped so that it matches ErrUnavailable
// too. Otherwise it returns f's error as is.
func (s *Supervisor) WithSession(ctx context.Context, f func(context.Context, *mcp.ClientSession) error) error {
	return s.withSession(ctx, time.Time{}, f)
}

// withSession is WithSession for a request that started at since (zero:
// now), from which its CallTimeout counts.
func (s *Supervisor) withSession(ctx context.Context, since time.Time, f func(context.Context, *mcp.ClientSession) error) error {
	g := s.ext.live.Load()
	if g == nil {
		return &unavailableError{server: s.cfg.Name, state: s.State()}
	}
	return g.request(ctx, "", since, func(ctx context.Context) error { return f(ctx, g.sess) })
}

// ReadResource reads a resource of the server through [Supervisor.WithSession].
func (s *Supervisor) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	var res *mcp.ReadResourceResult
	err := s.WithSession(ctx, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		return err
	})
	return res, err
}

// GetPrompt gets a prompt of the server, by its name on the server, through
// [Supervisor.WithSession].
func (s *Supervisor) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	var res *mcp.GetPromptResult
	err := s.WithSession(ctx, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		res, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
		return err
	})
	return res, err
}

// Subscribe subscribes to updates of the resource at uri, for this and
// every later generation: a reconnect re-sends the subscription before the
// generation is established. Updates arrive at
// Config.Client.ResourceUpdatedHandler. It returns the error of sending the
// subscription to the current session; during an outage that error matches
// [ErrUnavailable] but the subscription is kept, and sent when the server
// is back (a generation that was connecting meanwhile gets it once it is
// established). Subscribing twice to one uri is one subscription.
// Subscribe and Unsubscribe calls take effect one at a time, in the order
// they change the list, so the server ends with the subscriptions the
// list holds; a call that waits for another counts its CallTimeout from
// its start.
func (s *Supervisor) Subscribe(ctx context.Context, uri string) error {
	if uri == "" {
		return errors.New("conn: Subscribe: empty resource URI")
	}
	since, err := s.lockSubs(ctx)
	if err != nil {
		return err
	}
	defer s.unlockSubs()
	s.ext.subMu.Lock()
	if !slices.Contains(s.ext.subs, uri) {
		s.ext.subs = append(s.ext.subs, uri)
	}
	s.ext.subMu.Unlock()
	return s.withSession(ctx, since, func(ctx context.Context, cs *mcp.ClientSession) error {
		return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
}

// Unsubscribe ends a subscription made with [Supervisor.Subscribe]: later
// generations no longer get it, and the current session, if any, is told.
// During an outage it returns an error matching [ErrUnavailable], but the
// subscription is forgotten all the same.
func (s *Supervisor) Unsubscribe(ctx context.Context, uri string) error {
	since, err := s.lockSubs(ctx)
	if err != nil {
		return err
	}
	defer s.unlockSubs()
	s.ext.subMu.Lock()
	s.ext.subs = slices.DeleteFunc(s.ext.subs, func(u string) bool { return u == uri })
	s.ext.subMu.Unlock()
	return s.withSession(ctx, since, func(ctx context.Context, cs *mcp.ClientSession) error {
		return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
}

// lockSubs takes the right to change the subscriptions, so that the list
// and what the server is sent change in the same order; it gives up when
// ctx ends. A channel rather than a mutex: its wait can end with ctx. A
// caller that waited gets when it started, from which its CallTimeout
// counts (zero for one that did not wait).
func (s *Supervisor) lockSubs(ctx context.Context) (since time.Time, err error) {
	select {
	case s.ext.subSend <- struct{}{}:
		return time.Time{}, nil
	default:
	}
	since = s.clk.Now()
	select {
	case s.ext.subSend <- struct{}{}:
		return since, nil
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

func (s *Supervisor) unlockSubs() { <-s.ext.subSend }

// Subscriptions returns the resource URIs subscribed through the
// supervisor, in the order they were first subscribed.
func (s *Supervisor) Subscriptions() []string {
	s.ext.subMu.Lock()
	defer s.ext.subMu.Unlock()
	return slices.Clone(s.ext.subs)
}

// prepare is the rest of phase one after the tools are listed: re-send the
// subscriptions and list the catalog, within the attempt's deadline. A
// subscription the server refuses is logged, not fatal: the resource may be
// gone for good. A catalog the server advertises but cannot list fails the
// attempt, like a tool list.
func (g *generation) prepare(ctx context.Context) error {
	s := g.sup
	caps := g.sess.InitializeResult().Capabilities
	if caps != nil && caps.Resources != nil && caps.Resources.Subscribe {
		g.ext.takes, g.ext.sent = true, s.Subscriptions()
		for _, uri := range g.ext.sent {
			if err := g.sess.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("re-subscribe %q: %w", uri, causeOf(ctx, err))
				}
				err = redact.Error(err)
				s.cfg.Logger.Warn("resource subscription refused by the new session: "+err.Error(),
					"server", s.cfg.Name, "generation", g.id, "uri", uri, "err", err)
			}
		}
	}
	if s.cfg.Catalog == nil {
		return nil
	}
	cat, err := g.listCatalog(ctx)
	if err != nil {
		return err
	}
	g.ext.listed = cat
	return nil
}

// catchUpSubscriptions sends g what Subscribe and Unsubscribe changed
// after its attempt sent the subscriptions: they found no generation up
// (ErrUnavailable) and left the change to this one. It runs after g is
// the live generation, so a later change goes to g itself; one made
// meanwhile may be sent twice, which changes nothing.
func (s *Supervisor) catchUpSubscriptions(g *generation) {
	if !g.ext.takes {
		return
	}
	if add, drop := subsDiff(s.Subscriptions(), g.ext.sent); len(add)+len(drop) == 0 {
		return
	}
	s.workers.Add(1)
	go func() {
		defer s.workers.Done()
		ctx, cancel := withTimeout(g.ctx, s.clk, s.cfg.CallTimeout)
		defer cancel()
		if _, err := s.lockSubs(ctx); err != nil {
			return // retired, or the server is too slow: the next generation gets them
		}
		defer s.unlockSubs()
		add, drop := subsDiff(s.Subscriptions(), g.ext.sent)
		for _, uri := range add {
			if err := g.sess.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				s.cfg.Logger.Warn("resource subscription made while connecting was refused: "+redact.Error(err).Error(),
					"server", s.cfg.Name, "generation", g.id, "uri", uri, "err", redact.Error(err))
			}
		}
		for _, uri := range drop {
			_ = g.sess.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
		}
	}()
}

// subsDiff returns what is in want and not in sent, and the reverse.
func subsDiff(want, sent []string) (add, drop []string) {
	for _, uri := range want {
		if !slices.Contains(sent, uri) {
			add = append(add, uri)
		}
	}
	for _, uri := range sent {
		if !slices.Contains(want, uri) {
			drop = append(drop, uri)
		}
	}
	return add, drop
}

// startSession sets up what the supervisor keeps beyond tools: the
// initial roots, the catalog reservation (released with the registry's)
// and the handler goroutine. Start calls it before the loop runs.
func (s *Supervisor) startSession() error {
	s.ext.roots.roots = s.cfg.Roots
	s.ext.subSend = make(chan struct{}, 1)
	if c := s.cfg.Catalog; c != nil {
		release, err := c.reserve(s.cfg.Name, s)
		if err != nil {
			return err
		}
		if prev := s.release; prev != nil {
			s.release = func() { prev(); release() }
		} else {
			s.release = release
		}
	}
	s.startCallbacks()
	return nil
}
