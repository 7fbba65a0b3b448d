package access

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
)

// Environment variables holding the static bearer token; -token-file
// takes precedence over both.
const (
	// EnvToken holds the token of both surfaces of mcpfsm serve.
	EnvToken = "MCPFSM_TOKEN"
	// EnvLegacyToken is the console's former variable, still read when
	// EnvToken is unset.
	EnvLegacyToken = "MCPFSM_HTTP_TOKEN"
)

// MinTokenLen is the shortest static token accepted, in bytes.
const MinTokenLen = 16

// MinTokenBits is the least estimated strength of a static token
// ([TokenBits]). A random token of 16 hex digits is estimated at about 51
// bits (below 32 about once in a million), 16 × "a" at 0.
const MinTokenBits = 32

// ErrShortToken is returned for a static token shorter than MinTokenLen.
var ErrShortToken = errors.New("token too short")

// ErrWeakToken is returned for a static token estimated below
// MinTokenBits.
var ErrWeakToken = errors.New("token too weak")

// CheckToken refuses a static token shorter than MinTokenLen bytes, one
// estimated weaker than MinTokenBits ([TokenBits]: "aaaaaaaaaaaaaaaa",
// "passwordpassword"), or one with white space or control characters in
// it (a header cannot carry them intact). The error never contains the
// token.
func CheckToken(tok string) error {
	if len(tok) < MinTokenLen {
		return fmt.Errorf("access: %w: the token has %d bytes, at least %d are needed; make one with `openssl rand -hex 32`",
			ErrShortToken, len(tok), MinTokenLen)
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c <= ' ' || c == 0x7f {
			return fmt.Errorf("access: the token has a space or control character at byte %d; use printable characters only, e.g. `openssl rand -hex 32`", i)
		}
	}
	if bits := TokenBits(tok); bits < MinTokenBits {
		return fmt.Errorf("access: %w: the token's %d bytes repeat too much (about %.0f bits of entropy, at least %d are needed); make one with `openssl rand -hex 32`",
			ErrWeakToken, len(tok), bits, MinTokenBits)
	}
	return nil
}

// TokenBits estimates the strength of tok in bits: the Shannon entropy of
// its bytes' frequencies times its length, where a token that repeats a
// shorter string ("abcdabcd...") counts that string only. It is an upper
// bound for a random token's strength and catches repetition, not a
// dictionary word.
func TokenBits(tok string) float64 {
	tok = tok[:period(tok)]
	var counts [256]int
	for i := 0; i < len(tok); i++ {
		counts[tok[i]]++
	}
	n, h := float64(len(tok)), 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h * n
}

// period is the length of the shortest string repeated at least twice
// to make s (the last time possibly cut short): len(s) for a string that
// repeats nothing.
func period(s string) int {
	for p := 1; p <= len(s)/2; p++ {
		if s[p:] == s[:len(s)-p] {
			return p
		}
	}
	return len(s)
}

// LoadToken returns the static token: the content of file (flag
// -token-file; one trailing newline, or CRLF, is dropped) when file is set,
// else $MCPFSM_TOKEN, else the legacy $MCPFSM_HTTP_TOKEN, read through
// getenv (nil means os.Getenv). It returns "" when none is set. A file
// that group or others can read is refused, as is a token failing
// [CheckToken]; errors name the file or the variable, never the token.
func LoadToken(file string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if file != "" {
		fi, err := os.Stat(file)
		if err != nil {
			return "", fmt.Errorf("access: -token-file: %w", err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			return "", fmt.Errorf("access: -token-file %s: mode %04o lets group or others read the token; run chmod 600 %s",
				file, fi.Mode().Perm(), file)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("access: -token-file: %w", err)
		}
		tok := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if err := CheckToken(tok); err != nil {
			return "", fmt.Errorf("-token-file %s: %w", file, err)
		}
		return tok, nil
	}
	for _, name := range []string{EnvToken, EnvLegacyToken} {
		if tok := getenv(name); tok != "" {
			if err := CheckToken(tok); err != nil {
				return "", fmt.Errorf("$%s: %w", name, err)
			}
			return tok, nil
		}
	}
	return "", nil
}
