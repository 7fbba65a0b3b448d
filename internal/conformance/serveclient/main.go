// Command serveclient runs mcpfsm serve as the MCP conformance suite's
// client under test, as a person's host would: for an auth scenario it
// writes the scenario's server URL into a config in a host's format
// (Claude Code's .mcp.json; Cursor's auth block for a pre-registered
// client, its secret through ${VAR}), starts "mcpfsm serve -config FILE"
// over stdio with $BROWSER set to a script that follows the
// authorization URL with curl (the suite's authorization server consents
// at once and redirects to serve's loopback listener), lists serve's
// tools until the server's appear (serve signs in by itself) and calls
// each once. A tool call answered with a sign-in request (step-up) is
// made again after the next sign-in. It exits 0 for a scenario that is
// not an auth one, without running anything: .ci/conformance-serve-
// client.sh counts the auth scenarios only.
//
// Usage: serveclient MCPFSM SERVER_URL, with MCP_CONFORMANCE_SCENARIO
// and MCP_CONFORMANCE_CONTEXT set by the suite.
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clientMetadataURL is the client ID metadata document the suite serves
// for clients that register by URL (as cmd/conformance-host uses).
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: serveclient MCPFSM SERVER_URL (with MCP_CONFORMANCE_SCENARIO set)")
		os.Exit(2)
	}
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	if !strings.HasPrefix(scenario, "auth/") {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	if err := run(ctx, os.Args[1], os.Args[2], os.Getenv("MCP_CONFORMANCE_CONTEXT")); err != nil {
		fmt.Fprintln(os.Stderr, "serveclient:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, mcpfsm, url, rawContext string) error {
	params := map[string]any{}
	if rawContext != "" {
		if err := json.Unmarshal([]byte(rawContext), &params); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: not a JSON object: %w", err)
		}
	}
	dir, err := os.MkdirTemp("", "serveclient-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	id, _ := params["client_id"].(string)
	secret, _ := params["client_secret"].(string)
	entry := map[string]any{"type": "http", "url": url, "oauth": map[string]any{"clientMetadataUrl": clientMetadataURL}}
	if id != "" {
		// Cursor's keys for a pre-registered client; the secret from the
		// environment, as a config file should hold it.
		entry = map[string]any{"url": url, "auth": map[string]any{"CLIENT_ID": id, "CLIENT_SECRET": "${CONFORMANCE_CLIENT_SECRET}"}}
	}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"remote": entry}})
	cfgPath := filepath.Join(dir, ".mcp.json")
	browser := filepath.Join(dir, "browser.sh")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		return err
	}
	// The browser: follows the authorization endpoint's redirect to
	// serve's loopback listener.
	if err := os.WriteFile(browser, []byte("#!/bin/sh\nexec curl -s -o /dev/null -L --max-redirs 3 --max-time 10 \"$1\"\n"), 0o700); err != nil {
		return err
	}
	cmd := exec.Command(mcpfsm, "serve", "-config", cfgPath, "-timeout", "15s", "-log-level", cmp.Or(os.Getenv("SERVECLIENT_LOG_LEVEL"), "info"))
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(dir, "state"), "BROWSER="+browser, "CONFORMANCE_CLIENT_SECRET="+secret)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	failed, up := make(chan string, 1), make(chan struct{}, 4)
	go watch(stderr, failed, up)

	changed := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "serveclient", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return fmt.Errorf("connect to mcpfsm serve: %w", err)
	}
	defer sess.Close()

	tools, err := awaitTools(ctx, sess, changed, failed)
	if err != nil {
		return err
	}
	for _, t := range tools {
		for try := 0; ; try++ {
			for len(up) > 0 { // only an establishment after this call counts
				<-up
			}
			res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: t, Arguments: map[string]any{}})
			if err != nil {
				fmt.Fprintf(os.Stderr, "serveclient: call %s: %v\n", t, err)
				break
			}
			if !res.IsError || try == 2 || !signInAsked(res) {
				fmt.Fprintf(os.Stderr, "serveclient: called %s (isError %v)\n", t, res.IsError)
				break
			}
			// Step-up: serve signs in again; call once it is back.
			select {
			case <-up:
			case line := <-failed:
				return fmt.Errorf("serve did not sign in again: %s", line)
			case <-ctx.Done():
				return ctx.Err()
			}
			if _, err := awaitTools(ctx, sess, changed, failed); err != nil {
				return err
			}
		}
	}
	return nil
}

// awaitTools lists serve's tools until the remote server's are there.
func awaitTools(ctx context.Context, sess *mcp.ClientSession, changed <-chan struct{}, failed <-chan string) ([]string, error) {
	for {
		res, err := sess.ListTools(ctx, nil)
		if err != nil {
			return nil, err
		}
		var names []string
		for _, t := range res.Tools {
			if strings.HasPrefix(t.Name, "mcp__remote__") {
				names = append(names, t.Name)
			}
		}
		if len(names) > 0 {
			return names, nil
		}
		select {
		case <-changed:
		case line := <-failed:
			return nil, fmt.Errorf("serve did not sign in: %s", line)
		case <-ctx.Done():
			return nil, fmt.Errorf("serve never listed the server's tools: %w", ctx.Err())
		}
	}
}

// watch copies serve's stderr to ours and reports its first line saying
// a sign-in failed (or the connection failed after one succeeded), and
// each saying the server is established.
func watch(r io.Reader, failed chan<- string, up chan<- struct{}) {
	sc := bufio.NewScanner(r)
	signedIn := false
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(os.Stderr, line)
		signedIn = signedIn || strings.Contains(line, "signed_in=true")
		if signedIn && strings.Contains(line, "connection failed;") {
			// Signed in, and the server still does not connect: nothing
			// more is coming within the scenario's time.
			select {
			case failed <- line:
			default:
			}
		}
		if strings.Contains(line, "state=established") {
			select {
			case up <- struct{}{}:
			default:
			}
		}
		if strings.Contains(line, "the next call starts a new sign-in") {
			select {
			case failed <- line:
			default:
			}
		}
	}
}

// signInAsked reports a tool result that asks for a sign-in.
func signInAsked(res *mcp.CallToolResult) bool {
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok && strings.Contains(t.Text, "sign in") {
			return true
		}
	}
	return false
}
