package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The hosts' OAuth keys are read as their hosts read them, secrets
// through ${VAR}.
func TestOAuthKeys(t *testing.T) {
	env := func(name string) (string, bool) {
		if name == "SECRET" {
			return "s3cr3t", true
		}
		return "", false
	}
	tests := []struct {
		name, json string
		want       *OAuth
	}{
		{"claude code", `{"mcpServers": {"n": {"type": "http", "url": "https://mcp.example.com/mcp",
			"oauth": {"clientId": "abc", "callbackPort": 8080, "authServerMetadataUrl": "https://auth.example.com/.well-known/oauth-authorization-server", "scopes": "read write"}}}}`,
			&OAuth{Key: "oauth", ClientID: "abc", CallbackPort: 8080, AuthServerMetadataURL: "https://auth.example.com/.well-known/oauth-authorization-server", Scopes: []string{"read", "write"}}},
		{"gemini", `{"mcpServers": {"n": {"httpUrl": "https://mcp.example.com/mcp",
			"oauth": {"enabled": true, "clientId": "abc", "clientSecret": "${SECRET}", "authorizationUrl": "https://a.example.com/authorize", "tokenUrl": "https://a.example.com/token", "scopes": ["read", "write"]}}}}`,
			&OAuth{Key: "oauth", ClientID: "abc", ClientSecret: "s3cr3t", AuthorizationURL: "https://a.example.com/authorize", TokenURL: "https://a.example.com/token", Scopes: []string{"read", "write"}}},
		{"cursor", `{"mcpServers": {"n": {"url": "https://mcp.example.com/mcp",
			"auth": {"CLIENT_ID": "abc", "CLIENT_SECRET": "${SECRET}", "scopes": ["repo"]}}}}`,
			&OAuth{Key: "auth", ClientID: "abc", ClientSecret: "s3cr3t", Scopes: []string{"repo"}}},
		{"loopback http metadata", `{"mcpServers": {"n": {"url": "http://127.0.0.1:9/mcp", "oauth": {"authServerMetadataUrl": "http://localhost:9/.well-known/oauth-authorization-server"}}}}`,
			&OAuth{Key: "oauth", AuthServerMetadataURL: "http://localhost:9/.well-known/oauth-authorization-server"}},
		{"client id metadata document", `{"mcpServers": {"n": {"url": "https://mcp.example.com/mcp", "oauth": {"clientMetadataUrl": "https://example.com/mcpfsm-client.json"}}}}`,
			&OAuth{Key: "oauth", ClientMetadataURL: "https://example.com/mcpfsm-client.json"}},
		{"none", `{"mcpServers": {"n": {"url": "https://mcp.example.com/mcp"}}}`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.json), &Options{LookupEnv: env})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, cfg.Servers[0].OAuth); diff != "" {
				t.Errorf("OAuth (-want +got):\n%s", diff)
			}
			for _, w := range cfg.Warnings {
				if strings.Contains(w, "oauth") || strings.Contains(w, "auth") {
					t.Errorf("warning about a key that is read: %s", w)
				}
			}
		})
	}
}

// Bad OAuth input names the key, its path and the fix.
func TestOAuthKeyErrors(t *testing.T) {
	tests := []struct{ name, oauth, want string }{
		{"http metadata off loopback", `"oauth": {"authServerMetadataUrl": "http://auth.example.com/meta"}`,
			`mcpServers.n.oauth.authServerMetadataUrl must use https: "http://auth.example.com/meta" is plain http to auth.example.com, which is not this machine; give its https:// URL`},
		{"scopes wrong type", `"oauth": {"scopes": 3}`, `mcpServers.n.oauth.scopes must be a space-separated string of scopes such as "read write", or an array of them, not a number`},
		{"port wrong type", `"oauth": {"callbackPort": "8080"}`, `mcpServers.n.oauth.callbackPort must be a TCP port number, not a string`},
		{"port out of range", `"oauth": {"callbackPort": 70000}`, `mcpServers.n.oauth.callbackPort must be a TCP port number, at most 65535`},
		{"clientId wrong type", `"oauth": {"clientId": 1}`, `mcpServers.n.oauth.clientId must be a string, not a number`},
		{"unknown key", `"oauth": {"client_id": "x"}`, `mcpServers.n.oauth.client_id is not an oauth option`},
		{"not an object", `"oauth": true`, `mcpServers.n.oauth must be a JSON object, not a boolean`},
		{"half the endpoints", `"oauth": {"authorizationUrl": "https://a.example.com/authorize"}`, `give both authorizationUrl and tokenUrl`},
		{"client metadata over http", `"oauth": {"clientMetadataUrl": "http://example.com/c.json"}`,
			`mcpServers.n.oauth.clientMetadataUrl must be the https:// URL, with a path, where you publish mcpfsm's client ID metadata document`},
		{"cursor unknown", `"auth": {"client_id": "x"}`, `mcpServers.n.auth.client_id is not an auth option: give CLIENT_ID, CLIENT_SECRET or scopes`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(`{"mcpServers": {"n": {"url": "https://mcp.example.com/mcp", `+tc.oauth+`}}}`), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// An oauth block on a server mcpfsm does not sign in to is a warning
// naming it.
func TestOAuthOnAStdioServerWarns(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {"n": {"command": "x", "oauth": {"clientId": "abc"}}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "mcpServers.n.oauth is ignored: mcpfsm signs in only to Streamable HTTP servers (a url of type http), and this one is stdio"
	if !slices.Contains(cfg.Warnings, want) {
		t.Errorf("warnings %q, want %q", cfg.Warnings, want)
	}
}

// upstreamAuth takes "shared" and "per-caller"; token exchange is refused
// as not yet supported, naming the key and what to give.
func TestUpstreamAuth(t *testing.T) {
	for _, v := range []string{UpstreamAuthShared, UpstreamAuthPerCaller} {
		cfg, err := Parse([]byte(`{"mcpServers": {"n": {"url": "https://mcp.example.com/mcp", "upstreamAuth": "`+v+`"}}}`), nil)
		if err != nil || cfg.Servers[0].UpstreamAuth != v {
			t.Fatalf("%s: %v, %+v", v, err, cfg)
		}
	}
	cfg, err := Parse([]byte(`{"mcpServers": {"n": {"url": "https://mcp.example.com/mcp", "upstreamAuth": {"tokenExchange": {"tokenUrl": "https://as.example.com/token", "clientId": "gw", "scopes": "a b"}}}}}`), nil)
	if err != nil || cfg.Servers[0].TokenExchange == nil || cfg.Servers[0].TokenExchange.ClientID != "gw" || len(cfg.Servers[0].TokenExchange.Scopes) != 2 {
		t.Fatalf("tokenExchange: %v, %+v", err, cfg)
	}
	tests := []struct{ name, value, want string }{
		{"token exchange", `{"tokenExchange": {"audience": "x"}}`, `mcpServers.n.upstreamAuth.tokenExchange needs "tokenUrl"`},
		{"token exchange key", `{"tokenExchange": {"tokenUrl": "https://as.example.com/token", "clientId": "gw", "x": 1}}`, `mcpServers.n.upstreamAuth.tokenExchange.x is not a tokenExchange option`},
		{"other word", `"mine"`, `mcpServers.n.upstreamAuth must be "per-caller" (each OAuth caller of serve signs in as itself) or "shared"`},
		{"number", `3`, `mcpServers.n.upstreamAuth must be "per-caller", "shared" or an object {"tokenExchange": {...}}, not a number`},
		{"other key", `{"exchange": {}}`, `mcpServers.n.upstreamAuth.exchange is not an upstreamAuth option`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(`{"mcpServers": {"n": {"url": "https://mcp.example.com/mcp", "upstreamAuth": `+tc.value+`}}}`), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
