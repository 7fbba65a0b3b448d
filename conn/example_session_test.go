package conn_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// inMemory returns a transport to an in-process server, and a function
// that closes the server's sessions.
func inMemory(server *mcp.Server) (conn.Transport, func()) {
	var sessions []*mcp.ServerSession
	t := conn.TransportFunc(func(ctx context.Context) (mcp.Transport, error) {
		client, srv := mcp.NewInMemoryTransports()
		ss, err := server.Connect(ctx, srv, nil)
		sessions = append(sessions, ss)
		return client, err
	})
	return t, func() {
		for _, ss := range sessions {
			ss.Close()
		}
	}
}

// A server asks the host for input (elicitation) while one of its tools
// runs. The handler in Config.Client answers for every generation, so it
// keeps working after the supervisor reconnects.
func ExampleConfig_client() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "booking"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "book"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
			Message: "Which date?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
				"date": map[string]any{"type": "string", "default": "2026-12-24"}}},
		})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint("booked for ", res.Content["date"])}}}, nil, nil
	})
	transport, closeServer := inMemory(server)
	defer closeServer()
	reg := conn.NewRegistry()
	sup, err := conn.Start(ctx, conn.Config{
		// Elicitation during a call is a feature of the classic protocol.
		ProtocolVersion:    conn.ClassicProtocolVersion,
		Name:               "booking",
		Transport:          transport,
		Registry:           reg,
		FailOnStartupError: true,
		Logger:             quiet(),
		Client: &mcp.ClientOptions{
			// A real host asks its user; this one accepts the defaults.
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				fmt.Println("server asks:", req.Params.Message)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"date": "2026-12-24"}}, nil
			},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sup.Close(ctx)
	res, err := reg.Call(ctx, "mcp__booking__book", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// server asks: Which date?
	// booked for 2026-12-24
}

// WithSession reaches every request of the SDK's session, here
// resources/read, on the current generation; during an outage it fails
// fast with an error matching ErrUnavailable.
func ExampleSupervisor_WithSession() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "docs"}, nil)
	server.AddResource(&mcp.Resource{URI: "docs://readme", Name: "readme"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "Read me first."}}}, nil
		})
	transport, closeServer := inMemory(server)
	defer closeServer()
	sup, err := conn.Start(ctx, conn.Config{
		Name: "docs", Transport: transport, Registry: conn.NewRegistry(),
		FailOnStartupError: true, Logger: quiet(),
	})
	if err != nil {
		log.Fatal(err)
	}
	var text string
	err = sup.WithSession(ctx, func(ctx context.Context, cs *mcp.ClientSession) error {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "docs://readme"})
		if err != nil {
			return err
		}
		text = res.Contents[0].Text
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(text)
	if err := sup.Close(ctx); err != nil {
		log.Fatal(err)
	}
	err = sup.WithSession(ctx, func(context.Context, *mcp.ClientSession) error { return nil })
	fmt.Println(errors.Is(err, conn.ErrUnavailable))
	// Output:
	// Read me first.
	// true
}

// A Catalog shows a model the resources and prompts of every server, and
// reads any of them by server and URI or by public prompt name.
func ExampleCatalog() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "notes"}, nil)
	server.AddResource(&mcp.Resource{URI: "notes://today", Name: "today"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "buy milk"}}}, nil
		})
	server.AddPrompt(&mcp.Prompt{Name: "summarize"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Summarize my notes."}}}}, nil
	})
	transport, closeServer := inMemory(server)
	defer closeServer()
	cat := conn.NewCatalog()
	sup, err := conn.Start(ctx, conn.Config{
		Name: "notes", Transport: transport, Registry: conn.NewRegistry(), Catalog: cat,
		FailOnStartupError: true, Logger: quiet(),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sup.Close(ctx)
	for _, r := range cat.Resources() {
		res, err := r.Read(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(r.Server, r.Raw.URI, res.Contents[0].Text)
	}
	for _, p := range cat.Prompts() {
		res, err := cat.GetPrompt(ctx, p.Name, nil)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(p.Name, res.Messages[0].Content.(*mcp.TextContent).Text)
	}
	// Output:
	// notes notes://today buy milk
	// mcp__notes__summarize Summarize my notes.
}

// An HTTP server that wants a static bearer token: HTTP.Header is sent
// with every request of every generation.
func ExampleHTTP_header() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "secured"}, nil)
	server.AddTool(&mcp.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Extra.TokenInfo.UserID}}}, nil
		})
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token != "s3cret" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: "alice", Expiration: time.Now().Add(time.Hour)}, nil
	}
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	ts := httptest.NewServer(auth.RequireBearerToken(verify, nil)(handler))
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	transport := conn.Streamable(ts.URL)
	transport.Client = client
	transport.Header = http.Header{"Authorization": {"Bearer s3cret"}}
	reg := conn.NewRegistry()
	sup, err := conn.Start(ctx, conn.Config{
		Name: "secured", Transport: transport, Registry: reg, FailOnStartupError: true, Logger: quiet(),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sup.Close(ctx)
	res, err := reg.Call(ctx, "mcp__secured__whoami", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// alice
}

// An HTTP server behind OAuth: the go-sdk's authorization code handler
// discovers the authorization server, registers the client and sends the
// user to log in. One handler serves every generation, so its tokens
// survive a reconnect and the user logs in once.
func ExampleHTTP_oAuth() {
	ctx := context.Background()
	const redirect = "http://127.0.0.1:8976/callback"
	oauth, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		RedirectURL: redirect,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{ClientName: "my host", RedirectURIs: []string{redirect}},
		},
		// Open the user's browser at args.URL, then wait for the redirect
		// on a loopback listener at RedirectURL and return its code and
		// state (listener omitted here).
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			if err := exec.CommandContext(ctx, "xdg-open", args.URL).Run(); err != nil {
				return nil, err
			}
			return nil, errors.New("wait for the loopback redirect here")
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	transport := conn.Streamable("https://mcp.example.com/mcp")
	transport.OAuthHandler = oauth
	sup, err := conn.Start(ctx, conn.Config{Name: "remote", Transport: transport, Registry: conn.NewRegistry()})
	if err != nil {
		log.Fatal(err)
	}
	defer sup.Close(ctx)
}
