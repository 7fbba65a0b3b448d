package authz

import (
	"slices"

	"github.com/mcpfsm/mcpfsm/access"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Caller is who sent a request, as the policy sees it.
type Caller struct {
	// Subject is the access token's subject ("sub", or "client:" and its
	// client_id), access.SubjectToken for the static token, "" for a
	// caller that presented no credential.
	Subject string
	// Scopes are the access token's OAuth scopes.
	Scopes []string
	// Operator is the holder of the static token (or the one client of a
	// stdio front): it passes every rule. Rate limits still count it,
	// under its own bucket.
	Operator bool
}

// CallerOf returns the caller of a request authenticated as info (a
// server request's RequestExtra.TokenInfo). The operator is the static
// token's TokenInfo only ([access.Operator]): an OAuth token is never the
// operator, whatever its subject. A nil info is a caller without a
// credential: no subject, no scopes.
func CallerOf(info *auth.TokenInfo) Caller {
	if info == nil {
		return Caller{}
	}
	return Caller{Subject: info.UserID, Scopes: info.Scopes, Operator: access.Operator(info)}
}

// hasAny reports whether c holds one of scopes.
func (c Caller) hasAny(scopes []string) bool {
	for _, s := range scopes {
		if slices.Contains(c.Scopes, s) {
			return true
		}
	}
	return false
}

// key is the caller's identity for counting: the operator never shares a
// bucket with an OAuth subject spelled like it.
type key struct {
	operator bool
	subject  string
}

func (c Caller) key() key { return key{c.Operator, c.Subject} }
