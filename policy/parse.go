package policy

import (
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/mcpfsm/mcpfsm/internal/tree"
)

// Parse decodes a JSON reconnect object and resolves it with [Resolve].
//
// The document must be one JSON object whose keys are among enabled,
// initialDelayMs, maxDelayMs, maxAttempts, jitter and probeIntervalMs
// (case-sensitive), each
// at most once; whitespace may follow it, nothing else. A JSON null, for
// the whole document or for one option, means "defaults", so a
// `"reconnect": null` in a larger file behaves like an omitted one. Empty
// input, other JSON values, malformed JSON, unknown keys (with a hint when
// only the case differs), duplicate keys and values of the wrong JSON type
// are rejected with a message naming the field and the expected type.
//
// To validate a reconnect object embedded in a larger document, decode it
// there as a json.RawMessage and hand it to Parse with its path. The
// error, if any, matches [ErrInvalid]; see [FieldError].
func Parse(data []byte, path string) (Policy, error) {
	cfg, err := decode(data, path)
	if err == nil {
		return Resolve(cfg, path)
	}
	if cfg == nil {
		return Policy{}, err
	}
	// Report the rules the well-typed options break too, all at once,
	// but not a second error for an option decode rejected.
	errs := unjoin(err)
	bad := map[string]bool{}
	for _, e := range errs {
		if fe, ok := e.(*FieldError); ok {
			bad[fe.Field] = true
		}
	}
	_, rerr := Resolve(cfg, path)
	for _, e := range unjoin(rerr) {
		if fe, ok := e.(*FieldError); ok && !mentions(fe, bad) {
			errs = append(errs, e)
		}
	}
	return Policy{}, joinErrs(errs)
}

// mentions reports whether fe is about, or compares with, a field of bad.
func mentions(fe *FieldError, bad map[string]bool) bool {
	for f := range bad {
		if f == fe.Field || f != "" && strings.Contains(fe.Rule, f) {
			return true
		}
	}
	return false
}

// unjoin returns the errors joined in err (nil: none).
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// decode reads data into a Config, member by member, so that every
// problem is reported in document order (json.Unmarshal with
// DisallowUnknownFields stops at the first, matches keys
// case-insensitively, keeps the last of duplicate keys silently and words
// type errors in Go terms).
func decode(data []byte, path string) (*Config, error) {
	whole := func(rule string, cause error) error {
		return &FieldError{Path: path, Rule: rule, Err: cause}
	}
	v, err := tree.ParseJSON(data)
	var trailing *tree.TrailingError
	switch {
	case errors.Is(err, tree.ErrEmpty):
		return nil, whole("must be a JSON object, but the input is empty", nil)
	case errors.As(err, &trailing):
		// Decoder.Decode would accept "{} garbage" by stopping after the
		// object; insisting on the end catches truncated copy-paste and
		// concatenated documents.
		return nil, whole("must be a single JSON object, but data follows it at offset "+
			strconv.Itoa(trailing.Offset), nil)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, whole("is not valid JSON: unexpected end of input", err)
	case err != nil:
		return nil, whole("is not valid JSON: "+err.Error(), err)
	case v.Kind == tree.Null:
		return nil, nil // defaults, as documented on Parse
	case v.Kind != tree.Object:
		return nil, whole("must be a JSON object, not "+v.Kind.Article(), nil)
	}
	var errs []error
	reject := func(field, rule string) {
		errs = append(errs, &FieldError{Path: path, Field: field, Rule: rule})
	}
	cfg := &Config{}
	for _, m := range v.Members {
		if m.Repeated {
			reject(tree.Key(m.Key), "is set more than once")
			continue
		}
		decodeMember(cfg, m.Key, m.Value, reject)
	}
	return cfg, joinErrs(errs)
}

// decodeMember stores one option, or rejects it.
func decodeMember(cfg *Config, key string, v tree.Value, reject func(field, rule string)) {
	var dst **float64
	var want string
	switch key {
	case keyEnabled:
		switch v.Kind {
		case tree.Boolean:
			b := v.Text == "true"
			cfg.Enabled = &b
		case tree.Null:
		default:
			reject(key, "must be true or false, not "+v.Kind.Article())
		}
		return
	case keyInitialDelay:
		dst, want = &cfg.InitialDelayMs, "a number of milliseconds"
	case keyMaxDelay:
		dst, want = &cfg.MaxDelayMs, "a number of milliseconds"
	case keyMaxAttempts:
		dst, want = &cfg.MaxAttempts, "a positive integer"
	case keyJitter:
		dst, want = &cfg.Jitter, "a number between 0 and 1"
	case keyProbe:
		dst, want = &cfg.ProbeIntervalMs, "a number of milliseconds"
	default:
		reject(tree.Key(key), "is not a reconnect option ("+unknownHint(key)+")")
		return
	}
	switch v.Kind {
	case tree.Null:
		return
	case tree.Number:
	default:
		reject(key, "must be "+want+", not "+v.Kind.Article())
		return
	}
	// The text is a valid JSON number. Out-of-range values come back as
	// ±Inf or 0 with ErrRange; keeping them lets Resolve report the bound
	// that was broken rather than a parse failure.
	f, _ := strconv.ParseFloat(v.Text, 64)
	*dst = &f
}

// unknownHint suggests the intended key when only its case is wrong (JSON
// keys are case-sensitive here, unlike encoding/json), else lists them all.
func unknownHint(key string) string {
	for _, k := range knownKeys {
		if strings.EqualFold(k, key) {
			return "did you mean " + k + "?"
		}
	}
	return "known options: " + strings.Join(knownKeys, ", ")
}
