// Package tracectx holds the trace context keys a request's params._meta
// carries (SEP-414), for the packages that forward them without tracing
// themselves.
package tracectx

// Keys are the _meta keys of W3C trace context.
var Keys = []string{"traceparent", "tracestate", "baggage"}

// Copy copies the trace context keys of src, a client request's _meta,
// into dst, the _meta of the call it makes to a backend.
func Copy(dst, src map[string]any) {
	if len(src) == 0 {
		return
	}
	for _, k := range Keys {
		if v, ok := src[k].(string); ok {
			dst[k] = v
		}
	}
}
