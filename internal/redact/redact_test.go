package redact_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpfsm/mcpfsm/internal/redact"
)

func TestURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://host/mcp", "https://host/mcp"},
		{"http://127.0.0.1:8080/mcp?api_key=s3cret", "http://127.0.0.1:8080/mcp?api_key=REDACTED"},
		{"https://host/mcp?a=1&b=&token=x#frag", "https://host/mcp?a=REDACTED&b=REDACTED&token=REDACTED#frag"},
		{"https://host/cb#access_token=abc&state=1", "https://host/cb#access_token=REDACTED&state=REDACTED"},
		{"https://host/?s3cret", "https://host/?REDACTED"},
		{"postgres://app:hunter2@db/app", "postgres://***@db/app"},
		{"https://user@host/", "https://***@host/"},
		{"https://a:b@c@host:1/p", "https://***@host:1/p"},
		{"http://bad host/%zz?key=v", "http://bad host/%zz?key=REDACTED"}, // does not parse
		{"host/mcp?key=v", "host/mcp?key=REDACTED"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := redact.URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := redact.URL(redact.URL(tt.in)); got != tt.want {
			t.Errorf("URL(URL(%q)) = %q, want %q (idempotent)", tt.in, got, tt.want)
		}
	}
}

func TestLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{`Post "http://127.0.0.1:1/mcp?api_key=s3cret": dial tcp: connection refused`,
			`Post "http://127.0.0.1:1/mcp?api_key=REDACTED": dial tcp: connection refused`},
		{"cannot connect to postgres://app:hunter2@db/app.", "cannot connect to postgres://***@db/app."},
		{"see (https://h/x?t=1)", "see (https://h/x?t=REDACTED)"},
		{"OPENAI_API_KEY: sk-live-abc", "OPENAI_API_KEY: REDACTED"},
		{"password=hunter2 user=bob", "password=REDACTED user=bob"},
		{`{"api_key": "a secret phrase", "name": "x"}`, `{"api_key": "REDACTED", "name": "x"}`},
		{"X-Api-Key: k1", "X-Api-Key: REDACTED"},
		{"Authorization: Bearer abc.def-123", "Authorization: Bearer REDACTED"},
		{"authorization: Bearer abc", "authorization: Bearer REDACTED"},
		{"Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic REDACTED"},
		{"sent Bearer abcdef0123456789 to it", "sent Bearer REDACTED to it"},
		{"bearer authentication failed", "bearer authentication failed"},
		{"key sk-live-4f9a8b7c6d5e4f3a2b1c in use", "key REDACTED in use"},
		{"token ghp_abcdefghijklmnopqrstuvwxyz0123", "token REDACTED"},
		{"msg=api_key=x", "msg=api_key=REDACTED"},
		{"GIT_AUTHOR_NAME=bob PWD=/home/bob", "GIT_AUTHOR_NAME=bob PWD=/home/bob"},
		{"fatal: missing API key", "fatal: missing API key"},
		{"exit status 3", "exit status 3"},
	}
	for _, tt := range tests {
		if got := redact.Line(tt.in); got != tt.want {
			t.Errorf("Line(%q)\n = %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func TestError(t *testing.T) {
	if redact.Error(nil) != nil {
		t.Error("Error(nil) != nil")
	}
	plain := errors.New("nothing secret")
	if got := redact.Error(plain); got != plain {
		t.Errorf("Error(%v) = %v, want the error itself", plain, got)
	}
	ue := &url.Error{Op: "Post", URL: "http://h/mcp?api_key=s3cret", Err: fs.ErrNotExist}
	err := redact.Error(fmt.Errorf("calling initialize: %w", ue))
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Error() = %q, still has the secret", err)
	}
	var got *url.Error
	if !errors.As(err, &got) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("errors.As/Is lost the chain of %v", err)
	}
	if redact.Error(err) != err {
		t.Error("Error of a redacted error wraps it again")
	}
	b, jerr := json.Marshal(struct{ Err error }{redact.Error(ue)})
	if jerr != nil || strings.Contains(string(b), "s3cret") {
		t.Errorf("json = %s, %v: want no secret", b, jerr)
	}
}

func TestIsCredentialName(t *testing.T) {
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true, "GITHUB_TOKEN": true, "NPM_AUTH": true, "MYSQL_PWD": true, "SENTRY_DSN": true,
		"PATH": false, "PWD": false, "GIT_AUTHOR_NAME": false, "KEYBOARD": false,
	} {
		if got := redact.IsCredentialName(name); got != want {
			t.Errorf("IsCredentialName(%q) = %v, want %v", name, got, want)
		}
	}
	if !redact.HasURLPassword("postgres://a:b@h/d") || redact.HasURLPassword("https://a@h/") {
		t.Error("HasURLPassword misreads a URL")
	}
}
