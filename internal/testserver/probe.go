package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// probeArgs are the arguments of the probe tools.
type probeArgs struct {
	Arg string `json:"arg"` // a path, an address, a URL or a number of MiB
}

// childArgs run a probe in a child process of the server.
type childArgs struct {
	Probe string `json:"probe"` // read, write, dial, fetch or alloc
	Arg   string `json:"arg"`
}

// addProbes adds the tools that try what a sandbox may refuse: read,
// write, dial, fetch (through HTTP_PROXY, even for localhost), alloc and
// procs (start that many sleeping children), and child, which runs one of
// them in a child process. Each answers
// "ok: ..." or a tool error with the system's message.
func addProbes(srv *mcp.Server) {
	for _, kind := range []string{"read", "write", "dial", "fetch", "alloc", "procs"} {
		mcp.AddTool(srv, &mcp.Tool{Name: kind, Description: "probe: " + kind + " arg"},
			func(_ context.Context, _ *mcp.CallToolRequest, a probeArgs) (*mcp.CallToolResult, any, error) {
				return probeResult(probe(kind, a.Arg))
			})
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "child", Description: "runs a probe in a child process"},
		func(_ context.Context, _ *mcp.CallToolRequest, a childArgs) (*mcp.CallToolResult, any, error) {
			exe, err := os.Executable()
			if err != nil {
				return probeResult("", err)
			}
			out, err := exec.Command(exe, "-probe", a.Probe+":"+a.Arg).CombinedOutput()
			if err != nil {
				return probeResult("", fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out))))
			}
			return probeResult(strings.TrimPrefix(strings.TrimSpace(string(out)), "ok: "), nil)
		})
}

func probeResult(out string, err error) (*mcp.CallToolResult, any, error) {
	if err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil, nil
	}
	return text("ok: " + out), nil, nil
}

// runProbe is the -probe mode: one probe, its outcome on stdout.
func runProbe(spec string) int {
	kind, arg, _ := strings.Cut(spec, ":")
	out, err := probe(kind, arg)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("ok: " + out)
	return 0
}

func probe(kind, arg string) (string, error) {
	switch kind {
	case "read":
		b, err := os.ReadFile(arg)
		return string(b), err
	case "write":
		return "wrote " + arg, os.WriteFile(arg, []byte("written by testserver"), 0o644)
	case "dial":
		c, err := net.DialTimeout("tcp", arg, 2*time.Second)
		if err != nil {
			return "", err
		}
		c.Close()
		return "connected to " + arg, nil
	case "fetch":
		proxy, err := url.Parse(os.Getenv("HTTP_PROXY"))
		if err != nil || proxy.Host == "" {
			return "", fmt.Errorf("no HTTP_PROXY: the server has no network")
		}
		c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}, Timeout: 5 * time.Second}
		resp, err := c.Get(arg)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
		}
		return string(b), nil
	case "alloc":
		var mb int
		if _, err := fmt.Sscan(arg, &mb); err != nil {
			return "", err
		}
		keep := make([][]byte, 0, mb)
		for range mb {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = 1
			}
			keep = append(keep, b)
		}
		return fmt.Sprintf("allocated %d MiB", len(keep)), nil
	case "procs":
		var n int
		if _, err := fmt.Sscan(arg, &n); err != nil {
			return "", err
		}
		var cmds []*exec.Cmd
		defer func() {
			for _, c := range cmds {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
		}()
		for i := range n {
			c := exec.Command("sleep", "30")
			if err := c.Start(); err != nil {
				return "", fmt.Errorf("started %d: %w", i, err)
			}
			cmds = append(cmds, c)
		}
		return fmt.Sprintf("started %d", n), nil
	}
	return "", fmt.Errorf("unknown probe %q", kind)
}
