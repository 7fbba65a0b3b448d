package redact_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfsm/mcpfsm/internal/redact"
)

// TestSecretsByValue: a registered value is hidden whatever its shape,
// raw, JSON-quoted or URL-escaped; a short one is not registered; a
// value containing another is hidden whole.
func TestSecretsByValue(t *testing.T) {
	s := redact.NewSecrets()
	s.Add("fs.env.API_TOKEN", "supersecret-env-value-123")
	s.Add("x.env.SHORT", "short")
	s.Add("x.env.QUOTED", `a"b\c<d>&e f`)
	s.Add("x.env.INNER", "env-value") // inside the first
	for _, tc := range []struct{ in, want string }{
		{"boom: supersecret-env-value-123 leaked", "boom: [redacted fs.env.API_TOKEN] leaked"},
		{"short is kept", "short is kept"},
		{"a plain env-value", "a plain [redacted x.env.INNER]"},
		{`q=a"b\c<d>&e f`, `q=[redacted x.env.QUOTED]`},
		{"no secret here", "no secret here"},
	} {
		if got := s.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	b, _ := json.Marshal(map[string]string{"err": `x a"b\c<d>&e f y`})
	if got := s.String(string(b)); strings.Contains(got, `\u003c`) || !strings.Contains(got, "[redacted x.env.QUOTED]") {
		t.Errorf("in JSON: %s -> %s, want the quoted form hidden", b, got)
	}
	u := "https://h/?k=" + url.QueryEscape(`a"b\c<d>&e f`)
	if got := s.String(u); got != "https://h/?k=[redacted x.env.QUOTED]" {
		t.Errorf("in a URL: %s -> %s", u, got)
	}
	if n := s.Len(); n != 3 {
		t.Errorf("Len = %d, want 3 (the short value is not kept)", n)
	}
	var nilSecrets *redact.Secrets
	if got := nilSecrets.String("supersecret-env-value-123"); got != "supersecret-env-value-123" {
		t.Errorf("a nil registry changed the text: %q", got)
	}
	nilSecrets.Add("x", "supersecret-env-value-123") // must not panic
}

// TestSecretsError: errors.Is still finds the chain, and an error with
// nothing to hide is returned as it is.
func TestSecretsError(t *testing.T) {
	s := redact.NewSecrets()
	s.Add("tok", "0123456789abcdef")
	base := errors.New("root")
	err := s.Error(fmt.Errorf("sent 0123456789abcdef: %w", base))
	if err.Error() != "sent [redacted tok]: root" || !errors.Is(err, base) {
		t.Errorf("Error = %q (Is base %v)", err, errors.Is(err, base))
	}
	if s.Error(base) != base || s.Error(nil) != nil {
		t.Error("an error without a secret is not returned as it is")
	}
}

// TestSecretsHandler: a log record's message, string attributes, errors,
// groups and WithAttrs attributes lose the registered values.
func TestSecretsHandler(t *testing.T) {
	s := redact.NewSecrets()
	var buf bytes.Buffer
	log := slog.New(s.Handler(slog.NewJSONHandler(&buf, nil)))
	s.Add("fs.env.API_TOKEN", "supersecret-env-value-123") // after the logger: still hidden
	const v = "supersecret-env-value-123"
	log.With("early", "x "+v).WithGroup("g").Info("stderr: "+v, "line", v, "err", errors.New("exit: "+v),
		slog.Group("inner", "s", v), "n", 3, "stringer", stringer(v))
	out := buf.String()
	if strings.Contains(out, v) {
		t.Errorf("the secret is in the log: %s", out)
	}
	if n := strings.Count(out, "[redacted fs.env.API_TOKEN]"); n != 6 {
		t.Errorf("%d redactions, want 6: %s", n, out)
	}
	if !strings.Contains(out, `"n":3`) {
		t.Errorf("a number attribute was changed: %s", out)
	}
}

type stringer string

func (s stringer) String() string { return "S(" + string(s) + ")" }

// TestSecretsConcurrent: Add and String race-free.
func TestSecretsConcurrent(t *testing.T) {
	s := redact.NewSecrets()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				s.Add(fmt.Sprintf("n%d", i), fmt.Sprintf("secret-value-%d-%d", i, j))
				_ = s.String("secret-value-1-1")
			}
		})
	}
	wg.Wait()
	if got := s.String("secret-value-1-1"); got != "[redacted n1]" {
		t.Errorf("String = %q", got)
	}
}
