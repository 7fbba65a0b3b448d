package redact

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// MinSecretLen is the shortest value [Secrets] hides: a shorter one
// ("1", "true", "prod") would blank common words out of every text.
const MinSecretLen = 8

// Secrets is a registry of the secret values a process was configured
// with (environment values, header values, URL credentials and query
// values, tokens), by value: [Secrets.String] replaces each one of at
// least MinSecretLen bytes, wherever it appears, by "[redacted NAME]".
// Unlike [Line], it needs no shape: a value known to be secret is found
// whatever it looks like, in any text, a server's stderr included.
//
// Each value is also found in the forms it takes once quoted in JSON or
// escaped in a URL query, so that String can be applied to an encoded
// document as it leaves the process. A value once added stays hidden for
// the registry's life (a reload that drops it cannot bring it back into
// view). The zero value is empty and ready; a nil *Secrets hides
// nothing. It is safe for concurrent use.
type Secrets struct {
	mu     sync.Mutex
	byForm map[string]string // form -> name; under mu
	rep    atomic.Pointer[strings.Replacer]
}

// NewSecrets returns an empty registry.
func NewSecrets() *Secrets { return &Secrets{} }

// Add registers value as a secret called name (for example
// "fs.env.API_TOKEN"; name must not itself be secret). A value shorter
// than MinSecretLen bytes is ignored; a value already registered keeps
// its first name. Add is cheap to call again with the same pairs, so a
// reload may register its whole config anew.
func (s *Secrets) Add(name, value string) {
	if s == nil || len(value) < MinSecretLen {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byForm == nil {
		s.byForm = map[string]string{}
	}
	changed := false
	for _, form := range forms(value) {
		if _, ok := s.byForm[form]; !ok && len(form) >= MinSecretLen {
			s.byForm[form] = name
			changed = true
		}
	}
	if !changed {
		return
	}
	all := make([]string, 0, len(s.byForm))
	for f := range s.byForm {
		all = append(all, f)
	}
	// The longest first: strings.Replacer tries its pairs in order at each
	// position, so a secret containing another is replaced whole.
	slices.SortFunc(all, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b))
	})
	pairs := make([]string, 0, 2*len(all))
	for _, f := range all {
		pairs = append(pairs, f, "[redacted "+s.byForm[f]+"]")
	}
	s.rep.Store(strings.NewReplacer(pairs...))
}

// forms are the ways value can appear in text: as it is, quoted in JSON
// (without the quotes) and escaped in a URL query or path.
func forms(value string) []string {
	out := []string{value}
	if b, err := json.Marshal(value); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	out = append(out, url.QueryEscape(value), url.PathEscape(value))
	slices.Sort(out)
	return slices.Compact(out)
}

// Len is how many distinct values are registered.
func (s *Secrets) Len() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	names := map[string]bool{}
	for _, n := range s.byForm {
		names[n] = true
	}
	return len(names)
}

// String returns text with every registered value replaced by
// "[redacted NAME]".
func (s *Secrets) String(text string) string {
	if s == nil {
		return text
	}
	r := s.rep.Load()
	if r == nil {
		return text
	}
	return r.Replace(text)
}

// Error returns err with its message passed through [Secrets.String];
// like [Error], it unwraps to err, and is err itself when nothing was
// hidden.
func (s *Secrets) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := s.String(msg); clean != msg {
		return &redacted{err: err, msg: clean}
	}
	return err
}

// Handler returns a slog.Handler that passes every record to next with
// the registered values hidden in its message and in the string form of
// every attribute (errors, Stringers and values that print a secret
// included; other values are passed as they are). Attributes given to
// WithAttrs are hidden at that call, with the values registered then.
func (s *Secrets) Handler(next slog.Handler) slog.Handler {
	return &secretHandler{s: s, next: next}
}

type secretHandler struct {
	s    *Secrets
	next slog.Handler
}

func (h *secretHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *secretHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.s.String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *secretHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = h.attr(a)
	}
	return &secretHandler{s: h.s, next: h.next.WithAttrs(clean)}
}

func (h *secretHandler) WithGroup(name string) slog.Handler {
	return &secretHandler{s: h.s, next: h.next.WithGroup(name)}
}

// attr hides the registered values in a's value.
func (h *secretHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.s.String(v.String()))
	case slog.KindGroup:
		group := v.Group()
		clean := make([]any, len(group))
		for i, g := range group {
			clean[i] = h.attr(g)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		var text string
		if err, ok := v.Any().(error); ok {
			text = err.Error()
		} else {
			text = fmt.Sprint(v.Any())
		}
		if clean := h.s.String(text); clean != text {
			return slog.String(a.Key, clean)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
