// Package tree is the one strict reader of mcpfsm's configuration
// documents: a JSON document (or a Codex TOML table, converted by package
// config) becomes a tree of values whose objects keep their members in
// document order, repeated keys included and marked, so that a parser can
// report every problem of a document, each with its path, rather than
// stop at the first (encoding/json's Unmarshal stops at the first, matches
// keys case-insensitively and keeps the last of repeated keys silently).
//
// Package policy reads reconnect objects with it, package config whole
// files.
package tree

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
)

// Kind is the JSON type of a [Value].
type Kind uint8

// The kinds of value.
const (
	Null Kind = iota
	Boolean
	Number
	String
	Array
	Object
)

var kindNames = [...]string{Null: "null", Boolean: "boolean", Number: "number", String: "string", Array: "array", Object: "object"}

// String is the kind's JSON name: "null", "boolean", "number", "string",
// "array" or "object".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Article is the kind's name for a message: "null", "a string", "an
// object".
func (k Kind) Article() string {
	switch k {
	case Null:
		return "null"
	case Array, Object:
		return "an " + k.String()
	}
	return "a " + k.String()
}

// Value is one value of a document.
type Value struct {
	Kind Kind
	// Text is a String's value, a Number's text as the document writes it
	// (so that no digit is lost before the reader judges it), and "true"
	// or "false" for a Boolean.
	Text string
	// Elems are an Array's elements.
	Elems []Value
	// Members are an Object's members in document order, every repeated
	// key included (see [Member.Repeated]).
	Members []Member

	raw []byte // the value as its JSON document writes it; nil when converted
}

// Member is one key and value of an object.
type Member struct {
	Key   string
	Value Value
	// Repeated reports that an earlier member of the object has the same
	// key: a strict reader reports it, and reads the first.
	Repeated bool
}

// ErrEmpty is returned by [ParseJSON] for a document that holds no value
// (nothing, or only whitespace).
var ErrEmpty = errors.New("the document is empty")

// TrailingError is returned by [ParseJSON] for a document that holds more
// than one value.
type TrailingError struct {
	// Offset is the byte offset of what follows the first value.
	Offset int
}

func (e *TrailingError) Error() string {
	return "data follows the value at offset " + strconv.Itoa(e.Offset)
}

// ParseJSON reads the one JSON value of data. Its errors are [ErrEmpty],
// a [*TrailingError], or encoding/json's: a *json.SyntaxError (its Offset
// counts from the start of data) or io.ErrUnexpectedEOF for a value cut
// short.
func ParseJSON(data []byte) (Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return Value{}, ErrEmpty
		}
		return Value{}, err
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		rest := bytes.TrimLeft(data[end:], " \t\r\n") // JSON's whitespace
		return Value{}, &TrailingError{Offset: len(data) - len(rest)}
	}
	dec = json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return read(dec, raw, 0), nil
}

// read reads the next value of dec, which reads the valid JSON doc, the
// value starting at or after offset start (past a separator).
func read(dec *json.Decoder, doc []byte, start int64) Value {
	tok, _ := dec.Token() // doc is valid JSON
	var v Value
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			v.Kind = Array
			for dec.More() {
				v.Elems = append(v.Elems, read(dec, doc, dec.InputOffset()))
			}
		} else {
			v.Kind = Object
			seen := map[string]bool{}
			for dec.More() {
				k, _ := dec.Token()
				key := k.(string) // object keys are strings
				m := Member{Key: key, Value: read(dec, doc, dec.InputOffset()), Repeated: seen[key]}
				seen[key] = true
				v.Members = append(v.Members, m)
			}
		}
		_, _ = dec.Token() // the closing delimiter
	case string:
		v.Kind, v.Text = String, t
	case json.Number:
		v.Kind, v.Text = Number, string(t)
	case bool:
		v.Kind, v.Text = Boolean, strconv.FormatBool(t)
	case nil:
		v.Kind = Null
	}
	// Between start and the value are only whitespace and a separator.
	v.raw = bytes.TrimLeft(doc[start:dec.InputOffset()], " \t\r\n,:")
	return v
}

// JSON returns v as JSON text: as its document writes it, or, for a
// value made by a converter (a TOML table), encoded with its members in
// order.
func (v Value) JSON() []byte {
	if v.raw != nil {
		return v.raw
	}
	var b []byte
	return v.appendJSON(b)
}

func (v Value) appendJSON(b []byte) []byte {
	switch v.Kind {
	case Null:
		return append(b, "null"...)
	case Boolean, Number:
		return append(b, v.Text...)
	case String:
		return appendString(b, v.Text)
	case Array:
		b = append(b, '[')
		for i, e := range v.Elems {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.appendJSON(b)
		}
		return append(b, ']')
	}
	b = append(b, '{')
	for i, m := range v.Members {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, m.Key)
		b = append(b, ':')
		b = m.Value.appendJSON(b)
	}
	return append(b, '}')
}

func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

// Key is key as a path shows it: as it is when it is a plain identifier
// (ASCII letters, digits, '_' and '-'), Go-quoted otherwise, so that an
// empty key or one holding dots or spaces stays visible and unambiguous.
func Key(key string) string {
	plain := key != ""
	for _, c := range key {
		if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			plain = false
			break
		}
	}
	if !plain {
		return strconv.Quote(key)
	}
	return key
}

// Path appends key ([Key]) to the dotted path.
func Path(path, key string) string {
	if path == "" {
		return Key(key)
	}
	return path + "." + Key(key)
}

// Lookup returns the first member of the object v called key.
func (v Value) Lookup(key string) (Value, bool) {
	for _, m := range v.Members {
		if m.Key == key {
			return m.Value, true
		}
	}
	return Value{}, false
}

// Index is the path of element i of the array at path.
func Index(path string, i int) string {
	var b strings.Builder
	b.WriteString(path)
	b.WriteByte('[')
	b.WriteString(strconv.Itoa(i))
	b.WriteByte(']')
	return b.String()
}
