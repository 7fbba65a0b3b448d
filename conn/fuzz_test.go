package conn_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var validPublic = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// validServer is the rule Config.Name documents: 1 to 64 characters of
// [A-Za-z0-9_-] without "__".
// hashLike matches raw names that end like a hashed public name; they are
// hashed themselves.
var hashLike = regexp.MustCompile(`_[0-9a-f]{12}$`)

func validServer(s string) bool {
	return s != "" && len(s) <= 64 && regexp.MustCompile(`^[A-Za-z0-9_-]+$`).MatchString(s) && !strings.Contains(s, "__") && !strings.HasSuffix(s, "_")
}

// unchanged reports whether PublicToolName left "mcp__<server>__<raw>" as
// it is, without a hash suffix.
func unchanged(server, raw, public string) bool { return public == "mcp__"+server+"__"+raw }

func suffix(server, raw string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + raw))
	return "_" + hex.EncodeToString(sum[:])[:12]
}

// FuzzPublicToolName checks the public names of two identities.
//
// What "distinct identities never collide" can mean: a hashed name ends in
// 48 bits of SHA-256 of the identity, so two hashed names collide only by
// a hash collision (not findable by fuzzing); a hashed and an unchanged
// name collide only when the unchanged raw name was built to end in the
// other's suffix (a server can do that on purpose; the sync then reports
// an invalid list, see FuzzToolSync); two unchanged names collide exactly
// when the strings "mcp__<server>__<raw>" are equal, which for valid server
// names needs a server ending in '_' (see TestPublicToolNameUnderscoreSplit).
// The hash input "<server>\x00<raw>" is ambiguous only for servers holding
// a NUL, which Config validation rejects.
func FuzzPublicToolName(f *testing.F) {
	f.Add("fx", "echo", "fx", "echo2")
	f.Add("fx", "has space", "fx", "has_space")
	f.Add("fx", "dotted.name", "fx", "dotted:name")
	f.Add("a_", "b", "a", "_b")
	f.Add("srv", strings.Repeat("long", 30), "srv", strings.Repeat("long", 30)+"!")
	f.Add("x-y", "ünïcödé", "x", "y-ünïcödé")
	f.Fuzz(func(t *testing.T, s1, r1, s2, r2 string) {
		p1, p2 := conn.PublicToolName(s1, r1), conn.PublicToolName(s2, r2)
		for _, p := range []string{p1, p2} {
			if !validPublic.MatchString(p) {
				t.Fatalf("public name %q does not match %v", p, validPublic)
			}
		}
		if again := conn.PublicToolName(s1, r1); again != p1 {
			t.Fatalf("not deterministic: %q then %q", p1, again)
		}
		if validServer(s1) {
			if u, ok := unchanged(s1, r1, p1), validPublic.MatchString("mcp__"+s1+"__"+r1) && !hashLike.MatchString(r1); u != ok {
				t.Fatalf("PublicToolName(%q, %q) = %q: unchanged %v, but valid as it is %v", s1, r1, p1, u, ok)
			}
		}
		if !unchanged(s1, r1, p1) && !strings.HasSuffix(p1, suffix(s1, r1)) {
			t.Fatalf("changed name %q lacks the hash suffix %q", p1, suffix(s1, r1))
		}
		if p1 != p2 || (s1 == s2 && r1 == r2) || !validServer(s1) || !validServer(s2) {
			return
		}
		u1, u2 := unchanged(s1, r1, p1), unchanged(s2, r2, p2)
		switch {
		case u1 && u2:
			// Equal strings "mcp__<s>__<r>": the split is ambiguous.
			// Only servers ending in '_' allow it (s="a_", r="b" vs
			// s="a", r="_b"): a known gap, reported, not a panic here.
			if !strings.HasSuffix(s1, "_") && !strings.HasSuffix(s2, "_") {
				t.Fatalf("(%q, %q) and (%q, %q) share the unchanged name %q", s1, r1, s2, r2, p1)
			}
		case u1 != u2:
			// Only a raw name built to end in the other's hash collides.
			if u1 && !strings.HasSuffix(r1, suffix(s2, r2)[1:]) || u2 && !strings.HasSuffix(r2, suffix(s1, r1)[1:]) {
				t.Fatalf("(%q, %q) and (%q, %q) collide on %q", s1, r1, s2, r2, p1)
			}
		default:
			t.Fatalf("(%q, %q) and (%q, %q) collide on the hashed name %q", s1, r1, s2, r2, p1)
		}
	})
}

// TestPublicToolNameUnderscoreSplit: a server name ending in '_' could make
// two servers' unchanged names the same string; such names are hashed (and
// Config rejects them).
func TestPublicToolNameUnderscoreSplit(t *testing.T) {
	a, b := conn.PublicToolName("a_", "b"), conn.PublicToolName("a", "_b")
	if a == b {
		t.Errorf(`PublicToolName("a_", "b") and PublicToolName("a", "_b") are both %q`, a)
	}
}

// FuzzToolSync serves a fuzzed tool list from an in-memory server and
// checks that the supervisor registers exactly its distinct tools, or
// reports an invalid list, and never panics.
func FuzzToolSync(f *testing.F) {
	f.Add("echo\ncrash", uint8(0))
	f.Add("a\nb\nc\nd\ne", uint8(2))
	f.Add("dotted.name\ndotted:name\nhas space", uint8(1))
	f.Add("", uint8(0))
	f.Add("same\nsame", uint8(1))
	f.Add("\xff\n\xfe", uint8(1)) // distinct invalid UTF-8 that JSON turns into one name
	f.Add(strings.Repeat("x", 200)+"\n"+strings.Repeat("x", 201), uint8(3))
	f.Fuzz(func(t *testing.T, list string, pageSize uint8) {
		names := strings.Split(list, "\n")
		if list == "" {
			names = nil
		}
		if len(names) > 300 {
			names = names[:300]
		}
		// What the client can see: the server dedupes by name, and JSON
		// replaces invalid UTF-8.
		var wire []string
		for _, n := range names {
			if !slices.Contains(wire, n) {
				wire = append(wire, n)
			}
		}
		listed := map[string]bool{}
		invalid := false
		want := map[string]string{} // public -> raw
		for _, n := range wire {
			b, _ := json.Marshal(n)
			var rt string
			_ = json.Unmarshal(b, &rt)
			pub := conn.PublicToolName("fz", rt)
			if listed[rt] || want[pub] != "" {
				invalid = true
			}
			listed[rt] = true
			want[pub] = rt
		}

		srv := mcp.NewServer(&mcp.Implementation{Name: "fuzz", Version: "v1"}, &mcp.ServerOptions{
			PageSize: 1 + int(pageSize%8),
			Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		for _, n := range wire {
			srv.AddTool(&mcp.Tool{Name: n, InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{}, nil
				})
		}
		var sessions []*mcp.ServerSession
		transport := conn.TransportFunc(func(ctx context.Context) (mcp.Transport, error) {
			ct, st := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(ctx, st, nil)
			if err != nil {
				return nil, err
			}
			sessions = append(sessions, ss) // one attempt: no retry
			return ct, nil
		})
		reg := conn.NewRegistry()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sup, err := conn.Start(ctx, conn.Config{
			Name:               "fz",
			Transport:          transport,
			Registry:           reg,
			Reconnect:          &policy.Policy{Enabled: false, InitialDelay: time.Millisecond, MaxDelay: time.Millisecond, MaxAttempts: 1},
			FailOnStartupError: true,
			ConnectTimeout:     5 * time.Second,
			Logger:             slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		defer func() {
			for _, ss := range sessions {
				_ = ss.Close()
				_ = ss.Wait()
			}
		}()
		if invalid {
			if !errors.Is(err, conn.ErrInvalidToolList) {
				t.Fatalf("list %q: Start: %v, want an error matching ErrInvalidToolList", wire, err)
			}
			if n := len(reg.Tools()); n != 0 {
				t.Fatalf("%d tools registered from an invalid list", n)
			}
			return
		}
		if err != nil {
			t.Fatalf("list %q: Start: %v", wire, err)
		}
		defer func() {
			if err := sup.Close(context.Background()); err != nil {
				t.Errorf("Close: %v", err)
			}
			if n := len(reg.Tools()); n != 0 {
				t.Errorf("%d tools registered after Close", n)
			}
		}()
		tools := reg.Tools()
		if len(tools) != len(want) {
			t.Fatalf("registered %d tools, want %d", len(tools), len(want))
		}
		for _, tool := range tools {
			if raw, ok := want[tool.Name]; !ok || tool.Raw.Name != raw || tool.Server != "fz" {
				t.Fatalf("registered %q (raw %q), want raw %q", tool.Name, tool.Raw.Name, raw)
			}
			if !validPublic.MatchString(tool.Name) {
				t.Fatalf("registered invalid public name %q", tool.Name)
			}
		}
	})
}
