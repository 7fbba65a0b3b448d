package front

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
)

// noCredential is the OAuth handler of a caller in the tests: the
// in-memory transport of the rig's server never uses it.
type noCredential struct{}

func (noCredential) TokenSource(context.Context) (oauth2.TokenSource, error) { return nil, nil }
func (noCredential) Authorize(context.Context, *http.Request, *http.Response) error {
	return nil
}

// A client whose caller signs in to a server as itself
// (Options.CallerSignIn) gets its own instance of the server when its
// session has initialized, before any request to the server, and then
// lists the server's tools from it (told by tools/list_changed). A
// client without a subject starts none.
func TestCallerInstancesStartAtInitialized(t *testing.T) {
	r := newIsolationRigWith(t, false, func(o *Options) {
		o.CallerSignIn = func(server, subject string, _ func(context.Context) (string, error)) auth.OAuthHandler {
			if subject == "" {
				t.Errorf("CallerSignIn asked for a client without a subject")
			}
			return noCredential{}
		}
	})
	r.connect(t, "") // no subject: the operator's, a static token's
	changed := make(chan struct{}, 16)
	c := mcp.NewClient(&mcp.Implementation{Name: "alice"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.url, HTTPClient: asSubject("alice")},
		&mcp.ClientSessionOptions{ProtocolVersion: conn.ClassicProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for {
		res, err := sess.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "mcp__a__roots" }) {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("alice, who called nothing, lists %d tools and heard of no change; want a's from her own instance", len(res.Tools))
		}
	}
	r.bs.mu.Lock()
	// asked, not started: the front may list an instance's tools while
	// conn.Start has not yet returned to the starter that records it.
	n := r.bs.asked
	r.bs.mu.Unlock()
	if n != 1 {
		t.Errorf("%d instances asked for; want alice's alone", n)
	}
}
