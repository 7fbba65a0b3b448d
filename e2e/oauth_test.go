package e2e_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// countingOAuth is an auth.OAuthHandler that "logs in" by minting a token,
// counting each login.
type countingOAuth struct {
	mu     sync.Mutex
	logins int
	ts     oauth2.TokenSource
}

func (o *countingOAuth) TokenSource(context.Context) (oauth2.TokenSource, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ts, nil
}

func (o *countingOAuth) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.logins++
	o.ts = oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "tok", TokenType: "Bearer"})
	return nil
}

func (o *countingOAuth) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.logins
}

// The OAuth handler's token outlives a generation: a restart of the
// server ends the session, and the next generation reconnects with the
// token it has, without logging in again.
func TestOAuthTokenSurvivesReconnect(t *testing.T) {
	h := newHTTPServer(t)
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token != "tok" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: "u", Expiration: time.Now().Add(time.Hour)}, nil
	}
	front := httptest.NewServer(auth.RequireBearerToken(verify, nil)(h))
	defer front.Close()
	defer front.CloseClientConnections()
	oauth := &countingOAuth{}
	tr := conn.Streamable(front.URL)
	tr.Client = front.Client()
	tr.OAuthHandler = oauth
	e := &env{t: t, reg: conn.NewRegistry(), rec: conntest.NewRecorder(), starts: newStarts()}
	e.start(conn.Config{Transport: tr, Reconnect: fast(3), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	e.rec.Await(t, wait, conn.Established)
	e.mustEcho("before")
	if n := oauth.count(); n != 1 {
		t.Fatalf("%d logins to connect, want 1", n)
	}
	restarted := time.Now()
	h.restart(true)
	front.CloseClientConnections()
	awaitRecovery(t, e, restarted)
	if n := oauth.count(); n != 1 {
		t.Errorf("%d logins after a reconnect, want still 1", n)
	}
}
