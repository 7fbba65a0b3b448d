// Package publish is how conn makes what its servers list visible to a
// host: the public names of tools and prompts, the [Set] of tools by
// public name that a registry keeps, and the [Shelf] of per-server
// listings that a catalog keeps. Each swaps whole listings in one step,
// keeps its server names reserved, and announces every change on a
// signal a host waits on.
//
// It knows nothing of supervisors, generations or MCP sessions: conn's
// ToolRegistry and Catalog are facades over it, and conn decides what a
// value is, when a listing is still current and how a refusal reads.
package publish

import (
	"errors"
	"fmt"
)

// Why a [Set] refused a Register or a Replace, and why a Reserve failed;
// see [Refused].
var (
	ErrEmptyName = errors.New("empty public name")
	ErrTaken     = errors.New("public name already registered")
	ErrTwice     = errors.New("public name appears twice in one replacement")
	ErrReserved  = errors.New("server name already reserved")
)

// Refused is the error of a Register or a Replace that changed nothing.
// It unwraps to Why, one of [ErrEmptyName], [ErrTaken] and [ErrTwice], so
// that the owner of the set can word it in its own terms.
type Refused[V any] struct {
	Why    error
	Name   string // the public name refused
	Value  V      // the value refused
	Holder V      // the value that holds Name, for ErrTaken
}

// Error names the refused name and why, in publish's terms.
func (e *Refused[V]) Error() string { return fmt.Sprintf("publish: %q: %v", e.Name, e.Why) }

// Unwrap returns Why.
func (e *Refused[V]) Unwrap() error { return e.Why }
