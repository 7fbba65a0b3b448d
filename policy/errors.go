package policy

import (
	"errors"
	"strings"
)

// ErrInvalid is matched, through [errors.Is], by every error that [Parse],
// [Resolve] and [Policy.Validate] return. Callers that only need to know
// "the configuration was rejected" test for it; callers that want the
// offending field use [errors.As] with a [*FieldError].
var ErrInvalid = errors.New("invalid reconnect policy")

// FieldError reports one rejected part of a reconnect configuration. Its
// message is the path, the field and the rule, for example
//
//	servers.fs.reconnect.maxAttempts must be a positive integer
//
// When a configuration breaks several rules, the functions of this package
// return all of them joined with [errors.Join] (one per line, in a stable
// order), so use [errors.As] rather than a type assertion to reach the first
// one.
type FieldError struct {
	// Path locates the reconnect object in the caller's configuration,
	// such as "servers.fs.reconnect". It may be empty.
	Path string
	// Field is the offending option: a JSON key (initialDelayMs) for
	// Parse and Resolve, a Go field name (InitialDelay) for
	// Policy.Validate. It is empty when the rule is about the whole object
	// (not JSON, not an object, trailing data). An unknown key that is
	// empty or holds characters other than ASCII letters, digits, '_' and
	// '-' is stored Go-quoted, so that it stays visible in the dotted path.
	Field string
	// Rule states what the value must satisfy, phrased to complete the
	// sentence that starts with the path and field.
	Rule string
	// Err is the underlying cause when there is one (a *json.SyntaxError
	// for malformed input); it is nil otherwise.
	Err error
}

// Error returns "<path>.<field> <rule>". An empty path leaves just the field
// name; a rule about the whole object names the path, or "reconnect config"
// when the path is empty too.
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Field != "" {
		if e.Path != "" {
			b.WriteByte('.')
		}
		b.WriteString(e.Field)
	}
	if b.Len() == 0 {
		b.WriteString("reconnect config")
	}
	b.WriteByte(' ')
	b.WriteString(e.Rule)
	return b.String()
}

// Is reports whether target is [ErrInvalid], so that errors.Is(err,
// ErrInvalid) holds for every FieldError without each one wrapping it.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns the underlying cause, if any.
func (e *FieldError) Unwrap() error { return e.Err }

// joinErrs returns nil, the single error itself (so a lone rejection is a
// plain *FieldError), or all of them joined.
func joinErrs(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	default:
		return errors.Join(errs...)
	}
}
