// Package authz holds mcpfsm's per-caller rules: which caller may see and
// use which of a server's tools, prompts and resources ([Rules]), how
// often ([Limiter]), and what each caller asked for over the last hour
// ([Tally], for the console).
//
// A [Caller] is who sent a request: the subject and OAuth scopes of its
// access token (package front reads them from go-sdk's auth.TokenInfo),
// or the operator, who holds the static token and passes every rule. The
// package knows neither the SDK nor HTTP: a front turns a refusal into
// its protocol's error.
//
// # Rules
//
// A server's rules come from two config keys:
//
//	"allowScopes": ["github:read", "github:admin"]
//	"toolScopes":  {"delete_*": ["github:admin"], "create_*": ["github:write", "github:admin"]}
//
// A caller needs one of allowScopes to see or use any of the server's
// tools, prompts and resources; and, for a tool or prompt whose name (the
// server's own name, as in includeTools) matches a toolScopes pattern,
// also one of that pattern's scopes, for every pattern it matches. A
// pattern's '*' matches any run of characters, as in includeTools. A
// request refused is answered with the missing scope named ([DeniedError]),
// and nothing of what other callers may see.
//
// # Rate limits
//
// "rateLimit": "5/s" (or "N/m", "N/h") lets each caller of the server make
// N calls per period, all at once or spread out: a token bucket of N
// tokens refilled at N per period (golang.org/x/time/rate), one bucket per
// subject. A call past it is answered at once with [LimitError], which
// names the limit and when the next call is let through. A bucket left
// idle for a whole period is full again and is dropped, so memory holds
// only the callers of the last period or two.
//
// [Guard] holds a server's Rules and Limiter; [Guard.Check] decides a
// request that reaches the server (rules first, so a denied call spends
// no rate) and returns its [Verdict], which [Tally] counts.
//
// Every type here reads time from an injected clock (a *clock.Mock in
// tests), and nil *Rules and *Limiter let everything through, so that a
// server without rules or a limit costs a nil check.
package authz
