package authz

import "slices"

// Caller is who sent a request, as the rules see it.
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
