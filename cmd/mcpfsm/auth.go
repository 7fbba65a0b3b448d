package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mcpfsm/mcpfsm/access"
	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/internal/redact"
	"github.com/mcpfsm/mcpfsm/signin"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

const authUsage = `Usage:
  mcpfsm auth login NAME -config FILE [-timeout 10m]
  mcpfsm auth status -config FILE
  mcpfsm auth logout NAME -config FILE

Signs in to the remote (url) server NAME of FILE that needs OAuth, as
the hosts do: mcpfsm discovers the server's authorization server,
registers itself there (or uses the entry's oauth.clientId, Gemini CLI's
oauth block or Cursor's auth.CLIENT_ID), opens the authorization URL with
$BROWSER when it is set, else xdg-open or open (and prints it), waits for
the redirect on http://localhost:PORT/callback (oauth.callbackPort, or a
free port) and stores the credential. A running 'mcpfsm serve' or 'run'
picks it up within seconds, without a restart, and refreshes it.

Credentials are kept in $XDG_STATE_HOME/mcpfsm/credentials (or
~/.local/state/mcpfsm/credentials), one file per server at mode 0600;
with -credential-store redis://HOST:PORT/DB (or $MCPFSM_CREDENTIAL_STORE)
in Redis, shared by every replica given the same store, each value
encrypted with the key in $MCPFSM_CREDENTIAL_KEY (32 random bytes in
base64: openssl rand -base64 32).
status lists the servers of FILE and whether each is signed in; logout
deletes NAME's credential.

Exit status: 0 when the credential is stored (login), listed (status) or
removed (logout); 1 on failure; 2 on bad usage.
`

// credentialStoreEnv names the credential store when -credential-store
// is not given (the Helm chart sets it from a Secret).
const credentialStoreEnv = "MCPFSM_CREDENTIAL_STORE"

// credentialStore is the store of sign-in credentials spec names
// (-credential-store, else $MCPFSM_CREDENTIAL_STORE): a Redis store shared
// by replicas, its values encrypted with $MCPFSM_CREDENTIAL_KEY, or by
// default the files of mcpfsm's state directory. A Redis store is reached
// and its key checked at once; it lives as long as the process, and
// cmdAuth closes it.
func credentialStore(spec string) (signin.Store, error) {
	flag := "-credential-store"
	if spec == "" {
		spec, flag = os.Getenv(credentialStoreEnv), credentialStoreEnv
	}
	if spec == "" {
		dir, err := access.StateDir()
		if err != nil {
			return nil, err
		}
		return signin.NewFileStore(filepath.Join(dir, "credentials")), nil
	}
	scheme, _, _ := strings.Cut(spec, "://")
	if scheme != "redis" && scheme != "rediss" && scheme != "unix" {
		return nil, fmt.Errorf("%s %s: give redis://[:PASSWORD@]HOST:PORT/DB, rediss://... or unix:///PATH?db=N, or nothing for files in the state directory", flag, redact.URL(spec))
	}
	key, err := signin.KeyFromEnv()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, redact.URL(spec), err)
	}
	s, err := signin.OpenRedis(signin.RedisConfig{URL: spec, Key: key})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Check(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// loginHint is how a person signs in to server of the config at path.
func loginHint(server, path string) string {
	return "run: mcpfsm auth login " + shellWord(server) + " -config " + shellWord(path)
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`;&|<>()*?[]#~!{}") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// errSaid marks the store's error as printed.
var errSaid = errors.New("said")

// signInHandlers returns the host's Options.SignIn: one signin.Handler
// per server (by name and URL), kept across reloads, whose first need of
// a sign-in prints one line to stderr. Without a state directory it
// gives no handler (saying why once): such a server stops in auth-refused.
func signInHandlers(cmd, path, storeSpec string, stderr io.Writer) func(config.Server) auth.OAuthHandler {
	if stderr == nil {
		stderr = io.Discard
	}
	store, err := credentialStore(storeSpec)
	var mu sync.Mutex
	handlers := map[string]*signin.Handler{}
	return func(s config.Server) auth.OAuthHandler {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if err != errSaid { // said once, when an http server first needs a store
				fmt.Fprintf(stderr, "mcpfsm %s: remote servers that need a sign-in cannot be signed in to: %v\n", cmd, err)
				err = errSaid
			}
			return nil
		}
		key := s.Name + "\x00" + s.URL
		if h, ok := handlers[key]; ok {
			return h
		}
		name, url := s.Name, s.URL
		h := signin.NewHandler(signin.HandlerConfig{
			Server: name, Resource: url, Store: store, How: loginHint(name, path),
			OnSignInNeeded: func(how string) {
				fmt.Fprintf(stderr, "mcpfsm %s: server %q (%s) needs a sign-in: %s\n", cmd, name, redact.URL(url), how)
			},
		})
		handlers[key] = h
		return h
	}
}

func cmdAuth(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		if len(args) == 0 {
			fmt.Fprint(stderr, authUsage)
			return exitUsage
		}
		fmt.Fprint(stdout, authUsage)
		return exitOK
	}
	sub := args[0]
	switch sub {
	case "login", "logout", "status":
	default:
		return usageErr(stderr, "auth", "unknown subcommand %q: give login, status or logout", sub)
	}
	fs := newFlags("auth "+sub, authUsage)
	hf := addHostFlags(fs, "auth "+sub, "warn")
	timeout := fs.Duration("timeout", 10*time.Minute, "how long login waits for the sign-in")
	// NAME may come before the flags, as the usage shows it.
	rest := args[1:]
	var name string
	if sub != "status" && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		name, rest = rest[0], rest[1:]
	}
	if code, ok := parseFlags(fs, rest, stdout, stderr); !ok {
		return code
	}
	if sub != "status" && name == "" && fs.NArg() == 1 {
		name = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return usageErr(stderr, "auth", "unexpected argument %q", fs.Arg(0))
	}
	if sub != "status" && name == "" {
		return usageErr(stderr, "auth", "give the server's NAME: mcpfsm auth %s NAME -config FILE", sub)
	}
	_, cfg, stderr, code := hf.load(stderr)
	if cfg == nil {
		return code
	}
	store, err := credentialStore(*hf.store)
	if err != nil {
		fmt.Fprintf(stderr, "mcpfsm auth %s: %v\n", sub, err)
		return exitFail
	}
	if c, ok := store.(io.Closer); ok {
		defer c.Close()
	}
	if sub == "status" {
		return authStatus(ctx, cfg, store, stdout, stderr)
	}
	var srv *config.Server
	var names []string
	for i := range cfg.Servers {
		if cfg.Servers[i].URL != "" {
			names = append(names, cfg.Servers[i].Name)
		}
		if cfg.Servers[i].Name == name {
			srv = &cfg.Servers[i]
		}
	}
	if srv == nil || srv.Type != config.TypeHTTP {
		return usageErr(stderr, "auth", "%s has no Streamable HTTP server %q (its url servers: %s)", *hf.path, name, strings.Join(names, ", "))
	}
	if sub == "logout" {
		n, err := store.Delete(ctx, "", srv.URL)
		if err != nil {
			fmt.Fprintf(stderr, "mcpfsm auth logout: %v\n", err)
			return exitFail
		}
		fmt.Fprintf(stdout, "server %q: %d credential(s) removed\n", name, n)
		return exitOK
	}
	lctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c, err := signin.Login(lctx, signin.LoginConfig{
		Server: name, Resource: srv.URL, Store: store, Client: clientOf(srv.OAuth), Open: signin.OpenBrowser(stderr),
	})
	if err != nil {
		fmt.Fprintf(stderr, "mcpfsm auth login: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(stdout, "server %q: signed in (issuer %s, client %s); a running mcpfsm picks the credential up without a restart\n", name, c.Issuer, c.Client)
	return exitOK
}

// clientOf is the sign-in's client from the entry's oauth keys.
func clientOf(o *config.OAuth) signin.Client {
	if o == nil {
		return signin.Client{}
	}
	return signin.Client{ClientID: o.ClientID, ClientSecret: o.ClientSecret, Scopes: o.Scopes, CallbackPort: o.CallbackPort,
		AuthServerMetadataURL: o.AuthServerMetadataURL, AuthorizationURL: o.AuthorizationURL, TokenURL: o.TokenURL}
}

// authStatus prints, for each url server of cfg, whether it is signed in.
func authStatus(ctx context.Context, cfg *config.Config, store signin.Store, stdout, stderr io.Writer) int {
	code := exitOK
	for _, s := range cfg.Servers {
		if s.Type != config.TypeHTTP {
			continue
		}
		c, err := store.Find(ctx, "", s.URL)
		switch {
		case err != nil:
			fmt.Fprintf(stderr, "mcpfsm auth status: %v\n", err)
			code = exitFail
		case c == nil:
			fmt.Fprintf(stdout, "%s\tnot signed in\n", s.Name)
		default:
			exp := "no expiry"
			if !c.Expiry.IsZero() {
				exp = "expires " + c.Expiry.Format(time.RFC3339)
			}
			refresh := "no refresh token"
			if c.RefreshToken != "" {
				refresh = "refreshable"
			}
			fmt.Fprintf(stdout, "%s\tsigned in\tissuer %s\tclient %s\t%s\t%s\n", s.Name, c.Issuer, c.Client, exp, refresh)
		}
	}
	return code
}
