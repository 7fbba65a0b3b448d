package console

import (
	"context"
	"fmt"
	"net/http"

	"github.com/mcpfsm/mcpfsm/conn"
)

// SignInStarter is implemented by a [Server] whose host can start the
// operator's sign-in to it (a remote server that needs OAuth).
//
// SignIn starts the sign-in, or joins the one under way, and returns its
// authorization URL once it is known: the person who opens it signs in
// for the host. It returns an error saying why when the sign-in cannot
// start (discovery or registration failed) or ctx ends first.
type SignInStarter interface {
	SignIn(ctx context.Context) (authURL string, err error)
}

// SignInResult is the body of POST /api/servers/NAME/signin.
type SignInResult struct {
	Name string `json:"name"`
	// URL is the authorization URL to open in a browser; the server comes
	// up once its redirect has arrived.
	URL    string       `json:"url"`
	Server ServerStatus `json:"server"` // the server's status when the sign-in started
}

// canSignIn reports whether the operator can start a sign-in to s now: s
// needs one and its host can start it.
func canSignIn(s Server, st conn.Status) bool {
	_, ok := s.(SignInStarter)
	return ok && st.State == conn.NeedsAuthorization
}

// signIn starts the operator's sign-in to the server name and answers its
// authorization URL: 200, or 404 unknown server, 501 the host cannot sign
// in to it, 409 it needs no sign-in, 502 the sign-in did not start, 429
// one sooner than ReconnectInterval after the last. The URL is in the
// answer alone (never logged); the answer is not cached.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request, name string) {
	s, ok := c.find(name)
	if !ok {
		c.writeError(w, http.StatusNotFound, fmt.Sprintf("unknown server %q; GET /api/status lists the servers", name))
		return
	}
	starter, ok := s.(SignInStarter)
	if !ok {
		c.writeError(w, http.StatusNotImplemented, fmt.Sprintf("server %q: this host cannot start a sign-in from the console; run: mcpfsm auth login %s -config FILE", name, name))
		return
	}
	if st := s.Status(); st.State != conn.NeedsAuthorization {
		c.writeError(w, http.StatusConflict, fmt.Sprintf("server %q needs no sign-in: it is %s (%s)", name, st.State, st.State.Phrase()))
		return
	}
	if !c.allowManual(w, "signin:"+name, fmt.Sprintf("a sign-in to %q started", name)) {
		return
	}
	u, err := starter.SignIn(r.Context())
	st := s.Status()
	if err != nil {
		c.log.Warn("console: sign-in did not start", "server", name, "err", err)
		c.writeError(w, http.StatusBadGateway, fmt.Sprintf("server %q: the sign-in did not start: %v", name, err))
		return
	}
	c.log.Info("console: sign-in started by the operator", "server", name)
	c.writeJSON(w, http.StatusOK, SignInResult{Name: name, URL: u, Server: serverStatus(st, c.hist.recent(name))})
}
