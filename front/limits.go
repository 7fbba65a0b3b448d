package front

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/audit"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ResultLimits bound what one tool result puts into a client's context.
// A result larger than its server's limit is not dropped but cut at a
// content boundary (whole content blocks; a text block at its last line
// break before the limit, or at a character), with a note saying how
// much was cut; the whole result is kept for a while as a resource of the
// client's caller, linked from the result (a resource_link), which that
// caller alone reads with resources/read, in pages by byte range
// (ResultURIPrefix<id>?offset=N&length=M) when it is text. A result's
// size counts text by its bytes and binary content by its decoded size.
// What is kept is bounded in count, bytes and time; the oldest goes
// first.
type ResultLimits struct {
	// MaxBytes is the default limit of every server; zero means none.
	MaxBytes int
	// PerServer, if set, returns a server's own limit (its
	// maxResultBytes) and true when it has one, which MaxBytes yields
	// to; a negative one means none. It is asked at every result, so a
	// reload's new limit holds from the next call.
	PerServer func(server string) (int, bool)
	// Keep is how long a cut result is kept; zero means DefaultResultKeep.
	Keep time.Duration
	// KeepCount and KeepBytes bound what is kept across every client;
	// zero means DefaultResultKeepCount and DefaultResultKeepBytes.
	KeepCount int
	KeepBytes int64
	// OnCut, if set, is called for every result cut (for metrics): its
	// server, its size and the bytes cut.
	OnCut func(server string, size, cut int)
}

// The defaults of ResultLimits.
const (
	DefaultResultKeep      = 15 * time.Minute
	DefaultResultKeepCount = 64
	DefaultResultKeepBytes = 256 << 20
)

// ResultURIPrefix starts the URI of a kept result.
const ResultURIPrefix = "mcpfsm-result://"

// limitOf is server's limit, zero for none.
func (l ResultLimits) limitOf(server string) int {
	if l.PerServer != nil {
		if n, ok := l.PerServer(server); ok {
			return max(n, 0)
		}
	}
	return l.MaxBytes
}

// on reports whether any limit is set.
func (l ResultLimits) on() bool {
	return l.MaxBytes > 0 || l.PerServer != nil
}

// contentSize is what c puts into the context: text by its bytes, binary
// content by its decoded size.
func contentSize(c mcp.Content) int {
	switch c := c.(type) {
	case *mcp.TextContent:
		return len(c.Text)
	case *mcp.ImageContent:
		return len(c.Data)
	case *mcp.AudioContent:
		return len(c.Data)
	case *mcp.EmbeddedResource:
		if c.Resource != nil {
			return len(c.Resource.Text) + len(c.Resource.Blob)
		}
	case *mcp.ResourceLink:
		return len(c.URI) + len(c.Name) + len(c.Description)
	}
	return 0
}

// resultSize is the size of res: its content and its structured content.
func resultSize(res *mcp.CallToolResult) (content, structured int) {
	for _, c := range res.Content {
		content += contentSize(c)
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			structured = len(b)
		}
	}
	return content, structured
}

// cutInfo is what limiting one result did, for its audit record.
type cutInfo struct {
	limit, size, cut int
}

func (ci cutInfo) record(r *audit.Record) {
	r.MaxResultBytes, r.ResultBytes, r.CutBytes = ci.limit, ci.size, ci.cut
}

// limit cuts res, served as name by server, to server's limit, keeping
// the whole of it for owner; a result within it passes as it is.
func (r *results) limit(owner resultOwner, server, name string, res *mcp.CallToolResult) (*mcp.CallToolResult, cutInfo) {
	lim := r.lim
	limitN := lim.limitOf(server)
	if res == nil || limitN <= 0 {
		return res, cutInfo{}
	}
	content, structured := resultSize(res)
	size := content + structured
	if size <= limitN {
		return res, cutInfo{limit: limitN, size: size}
	}
	out := *res
	out.Content = nil
	used := 0
	if structured > 0 && content+structured > limitN {
		out.StructuredContent = nil // the content says what it does, in fewer bytes than both
	} else {
		used = structured
	}
	for _, block := range res.Content {
		n := contentSize(block)
		if used+n <= limitN {
			out.Content = append(out.Content, block)
			used += n
			continue
		}
		if t, ok := block.(*mcp.TextContent); ok && used < limitN {
			part := cutText(t.Text, limitN-used)
			if part != "" {
				cp := *t
				cp.Text = part
				out.Content = append(out.Content, &cp)
				used += len(part)
			}
		}
		break // whole blocks only after the cut: nothing past it
	}
	cut := size - used
	uri, kept := r.keep(owner, res, r.clock.Now())
	note := fmt.Sprintf("[mcpfsm: this result was cut at %d of its %d bytes (limit %d of server %q); %d bytes were cut.", used, size, limitN, server, cut)
	if kept {
		note += fmt.Sprintf(" The whole result is kept for %v as resource %s: read it with resources/read, in pages with ?offset=N&length=M.]", lim.keepFor(), uri)
	} else {
		note += " It is too large to be kept.]"
	}
	out.Content = append(out.Content, &mcp.TextContent{Text: note})
	if kept {
		size64 := int64(size)
		out.Content = append(out.Content, &mcp.ResourceLink{URI: uri, Name: "result of " + name, Size: &size64,
			Description: "the whole result, cut in this answer", MIMEType: keptMIME(res)})
	}
	if lim.OnCut != nil {
		lim.OnCut(server, size, cut)
	}
	return &out, cutInfo{limit: limitN, size: size, cut: cut}
}

// cutText is the longest start of s of at most n bytes that ends at a
// line break, or at a character when the first line is longer.
func cutText(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	if i := strings.LastIndexByte(s[:n], '\n'); i >= 0 {
		return s[:i+1]
	}
	return s[:n]
}

func (l ResultLimits) keepFor() time.Duration {
	if l.Keep > 0 {
		return l.Keep
	}
	return DefaultResultKeep
}

// keptMIME is the type of the resource a result is kept as: its text when
// it is all text, its JSON otherwise.
func keptMIME(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if _, ok := c.(*mcp.TextContent); !ok {
			return "application/json"
		}
	}
	return "text/plain"
}

// keptText is what a kept result reads as: its texts, one after the
// other, or its JSON.
func keptText(res *mcp.CallToolResult) string {
	if keptMIME(res) == "text/plain" {
		var b strings.Builder
		for _, c := range res.Content {
			b.WriteString(c.(*mcp.TextContent).Text)
		}
		return b.String()
	}
	b, err := json.Marshal(res)
	if err != nil {
		return ""
	}
	return string(b)
}

// keptResult is one result kept for its owner.
type keptResult struct {
	owner   resultOwner
	text    string
	mime    string
	expires time.Time
}

// resultOwner is who may read a kept result: the caller's subject, or,
// without one, the client itself (by its number, client.id).
type resultOwner struct {
	subject  string
	clientID uint64
}

// results are the cut results kept for their owners, oldest first, and
// the reads of them. A results has a lock of its own, mu, taken alone.
// The Front holds one for all its clients (set up by New with the
// Options' limits and clock); the tools/call handler cuts each result
// through it (limit), every client's server reads a kept result through
// it (middleware), and a client that ends forgets its own (forget).
type results struct {
	lim   ResultLimits
	clock clock.Clock

	mu    sync.Mutex
	byID  map[string]*keptResult
	order []string
	bytes int64
}

// keep keeps res for owner, within the bounds, and returns its URI.
func (r *results) keep(owner resultOwner, res *mcp.CallToolResult, now time.Time) (string, bool) {
	lim := r.lim
	text := keptText(res)
	maxBytes, maxCount := lim.KeepBytes, lim.KeepCount
	if maxBytes <= 0 {
		maxBytes = DefaultResultKeepBytes
	}
	if maxCount <= 0 {
		maxCount = DefaultResultKeepCount
	}
	if int64(len(text)) > maxBytes {
		return "", false
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	key := hex.EncodeToString(id[:])
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil {
		r.byID = map[string]*keptResult{}
	}
	r.expire(now)
	for len(r.order) > 0 && (len(r.order) >= maxCount || r.bytes+int64(len(text)) > maxBytes) {
		r.remove(r.order[0])
	}
	r.byID[key] = &keptResult{owner: owner, text: text, mime: keptMIME(res), expires: now.Add(lim.keepFor())}
	r.order = append(r.order, key)
	r.bytes += int64(len(text))
	return ResultURIPrefix + key, true
}

// expire removes what expired by now; r.mu is held.
func (r *results) expire(now time.Time) {
	for len(r.order) > 0 && !now.Before(r.byID[r.order[0]].expires) {
		r.remove(r.order[0])
	}
}

// remove forgets key; r.mu is held.
func (r *results) remove(key string) {
	if k, ok := r.byID[key]; ok {
		r.bytes -= int64(len(k.text))
		delete(r.byID, key)
	}
	for i, o := range r.order {
		if o == key {
			r.order = append(r.order[:i], r.order[i+1:]...)
			break
		}
	}
}

// forget removes the results only the client numbered id may read, when
// it ends.
func (r *results) forget(id uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, key := range append([]string(nil), r.order...) {
		if r.byID[key].owner.clientID == id {
			r.remove(key)
		}
	}
}

// DefaultResultPage is how many bytes of a kept result a read without a
// length answers.
const DefaultResultPage = 64 << 10

// read answers a read of a kept result, for its owner alone: a page of
// its text from offset, of length bytes, at character bounds, with the
// total and the next offset in its _meta.
func (r *results) read(owner resultOwner, uri string) (*mcp.ReadResourceResult, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, notKept(uri)
	}
	offset, length := 0, DefaultResultPage
	for key, dst := range map[string]*int{"offset": &offset, "length": &length} {
		if v := u.Query().Get(key); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || key == "length" && n == 0 {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
					Message: fmt.Sprintf("resource %q: %s=%q: give a whole number of bytes (offset from 0, length from 1)", uri, key, v)}
			}
			*dst = n
		}
	}
	r.mu.Lock()
	r.expire(r.clock.Now())
	k, ok := r.byID[u.Host]
	r.mu.Unlock()
	if !ok || k.owner != owner {
		return nil, notKept(uri) // another caller's is as unknown as a lost one
	}
	text := k.text
	start := min(offset, len(text))
	for start < len(text) && !utf8.RuneStart(text[start]) {
		start++
	}
	end := min(start+length, len(text))
	for end < len(text) && end > start && !utf8.RuneStart(text[end]) {
		end--
	}
	meta := mcp.Meta{"mcpfsm/total": len(text), "mcpfsm/offset": start}
	if end < len(text) {
		meta["mcpfsm/next"] = fmt.Sprintf("%s%s?offset=%d&length=%d", ResultURIPrefix, u.Host, end, length)
	}
	return &mcp.ReadResourceResult{Meta: meta, Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: k.mime, Text: text[start:end]}}}, nil
}

func notKept(uri string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
		Message: fmt.Sprintf("resource %q: no result is kept under this URI for you (results are kept for a while only, for the caller that got them)", uri)}
}

// middleware answers the reads of kept results, each for the owner that
// ownerOf names for the request.
func (r *results) middleware(ownerOf func(*mcp.RequestExtra) resultOwner) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		if !r.lim.on() {
			return next
		}
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			rr, ok := req.(*mcp.ReadResourceRequest)
			if method != "resources/read" || !ok || rr.Params == nil || !strings.HasPrefix(rr.Params.URI, ResultURIPrefix) {
				return next(ctx, method, req)
			}
			return r.read(ownerOf(rr.Extra), rr.Params.URI)
		}
	}
}
