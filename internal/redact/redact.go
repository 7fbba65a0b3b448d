// Package redact takes secrets out of text bound for a log, an error, a
// status or a metric: the password and query values of a URL,
// credential-shaped NAME=value pairs, bearer tokens and API-key-shaped
// tokens. It is a heuristic: it errs towards hiding too much, and a secret
// that looks like nothing in particular passes.
package redact

import (
	"regexp"
	"strings"
)

// Mask is what stands in for a removed secret.
const Mask = "REDACTED"

// URL returns s with its userinfo, user name included, replaced by "***"
// and every query value replaced by [Mask], the keys kept
// ("https://***@host/mcp?api_key=REDACTED"). A query part without '=' is
// masked whole, and so are the values of a fragment that has '=' in it
// (an OAuth implicit grant's "#access_token=..."). s need not parse: the
// rewrite works on the text, so it also covers a malformed URL quoted in
// an error.
func URL(s string) string {
	var b strings.Builder
	rest := s
	if i := strings.Index(rest, "://"); i >= 0 {
		b.WriteString(rest[:i+3])
		rest = rest[i+3:]
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			end = len(rest)
		}
		authority := rest[:end]
		if at := strings.LastIndexByte(authority, '@'); at >= 0 {
			b.WriteString("***@")
			authority = authority[at+1:]
		}
		b.WriteString(authority)
		rest = rest[end:]
	}
	frag, hasFrag := "", false
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest, frag, hasFrag = rest[:i], rest[i+1:], true
	}
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		b.WriteString(rest[:i+1])
		b.WriteString(maskQuery(rest[i+1:]))
	} else {
		b.WriteString(rest)
	}
	if hasFrag {
		b.WriteByte('#')
		if strings.Contains(frag, "=") {
			frag = maskQuery(frag)
		}
		b.WriteString(frag)
	}
	return b.String()
}

// maskQuery masks the values of a raw query, keeping its keys and order.
func maskQuery(q string) string {
	if q == "" {
		return q
	}
	parts := strings.Split(q, "&")
	for i, p := range parts {
		if p == "" {
			continue
		}
		if k, _, ok := strings.Cut(p, "="); ok {
			parts[i] = k + "=" + Mask
		} else {
			parts[i] = Mask
		}
	}
	return strings.Join(parts, "&")
}

var (
	// urlRE finds a URL in free text; it stops at white space and at the
	// quotes %q puts around one.
	urlRE = regexp.MustCompile("[A-Za-z][A-Za-z0-9+.-]*://[^\\s\"'<>`]+")
	// tokenRE finds tokens whose shape gives them away: OpenAI- and
	// Stripe-style sk-/pk-/rk- keys, GitHub, GitLab and Slack tokens, AWS
	// access key IDs and JWTs.
	tokenRE = regexp.MustCompile(`\b(?:(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|` +
		`xox[abprs]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})`)
	// schemeRE finds an Authorization scheme and its credentials.
	schemeRE = regexp.MustCompile(`(?i)\b(bearer|basic)([ \t]+)([A-Za-z0-9._~+/-]+=*)`)
	// schemeArgRE is the word after an Authorization scheme.
	schemeArgRE = regexp.MustCompile(`^[ \t]+[^\s"'&,;]+`)
	// pairRE finds NAME=value and NAME: value, JSON's "NAME": "value"
	// included; a quoted value may hold spaces.
	pairRE = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_.-]*)(["']?[ \t]*[:=][ \t]*)("[^"]*"|'[^']*'|[^\s"'&,;]+)`)
)

// Line returns s, one line of free text such as an error message or a
// line a server wrote to its standard error, with its secrets replaced by
// [Mask]: every URL as [URL] rewrites it, the value of every NAME=value or
// NAME: value pair whose name is credential-shaped ([IsCredentialName],
// with '-' read as '_', or a name ending in Authorization), the
// credentials after "Bearer" or "Basic", and tokens of a well-known shape
// (sk-..., ghp_..., xoxb-..., AKIA..., JWTs).
func Line(s string) string {
	s = urlRE.ReplaceAllStringFunc(s, func(u string) string {
		trimmed := strings.TrimRight(u, ".,;:!)]}")
		return URL(trimmed) + u[len(trimmed):]
	})
	s = tokenRE.ReplaceAllLiteralString(s, Mask)
	s = schemeRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := schemeRE.FindStringSubmatch(m)
		if !tokenLike(sub[3]) {
			return m
		}
		return sub[1] + sub[2] + Mask
	})
	return maskPairs(s)
}

// tokenLike tells credentials from words: "Bearer abc123xyz" hides a
// token, "bearer authentication failed" does not.
func tokenLike(v string) bool {
	if v == Mask || len(v) < 8 {
		return false
	}
	return strings.ContainsAny(v, "0123456789-._~+/=")
}

// maskPairs masks the values of the credential-shaped pairs of s. The
// value of any other pair is scanned too, so that "msg=api_key=x" loses x.
func maskPairs(s string) string {
	var b strings.Builder
	for {
		m := pairRE.FindStringSubmatchIndex(s)
		if m == nil {
			b.WriteString(s)
			return b.String()
		}
		name, valStart, valEnd := s[m[2]:m[3]], m[6], m[7]
		if !isSecretKey(name) {
			b.WriteString(s[:valStart])
			s = s[valStart:]
			continue
		}
		b.WriteString(s[:valStart])
		if v := s[valStart:valEnd]; strings.EqualFold(v, "bearer") || strings.EqualFold(v, "basic") {
			// "Authorization: Bearer <token>": the token is the next word.
			b.WriteString(v)
			s = s[valEnd:]
			if w := schemeArgRE.FindStringIndex(s); w != nil {
				arg := s[:w[1]]
				b.WriteString(arg[:len(arg)-len(strings.TrimLeft(arg, " \t"))] + Mask) // the spaces, then the mask
				s = s[w[1]:]
			}
			continue
		} else if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') {
			b.WriteString(v[:1] + Mask + v[:1])
		} else {
			b.WriteString(Mask)
		}
		s = s[valEnd:]
	}
}

// Error returns err with a message that [Line] has redacted. Its Unwrap
// returns err, so errors.Is and errors.As still find every error of the
// chain (whose own fields are not redacted: a *url.Error found with
// errors.As still holds the URL). It returns err itself when Line leaves
// its message as it is, and nil for nil.
func Error(err error) error {
	if err == nil {
		return nil
	}
	if _, done := err.(*redacted); done {
		return err
	}
	msg := err.Error()
	if clean := Line(msg); clean != msg {
		return &redacted{err: err, msg: clean}
	}
	return err
}

// redacted is an error whose message was redacted. It has no exported
// field, so that encoding/json cannot reach the original error.
type redacted struct {
	err error
	msg string
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }
