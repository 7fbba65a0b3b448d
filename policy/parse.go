package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
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
	if err != nil {
		return Policy{}, err
	}
	return Resolve(cfg, path)
}

// decode reads data into a Config. It walks the object token by token
// rather than using json.Unmarshal with DisallowUnknownFields, because that
// stops at the first problem, matches keys case-insensitively, keeps the
// last of duplicate keys silently and words type errors in Go terms.
// Walking the tokens lets every problem be reported, in document order.
func decode(data []byte, path string) (*Config, error) {
	whole := func(rule string, cause error) error {
		return &FieldError{Path: path, Rule: rule, Err: cause}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	switch {
	case errors.Is(err, io.EOF):
		return nil, whole("must be a JSON object, but the input is empty", nil)
	case err != nil:
		return nil, whole(syntaxRule(err), err)
	}
	var cfg *Config
	switch tok {
	case nil:
		// null: defaults, as documented on Parse.
	case json.Delim('{'):
		cfg = &Config{}
		if err := decodeObject(dec, cfg, path); err != nil {
			return nil, err
		}
	default:
		return nil, whole("must be a JSON object, not "+tokenKind(tok), nil)
	}
	// Decoder.Decode would accept "{} garbage" by stopping after the
	// object; insisting on EOF catches truncated copy-paste and
	// concatenated documents.
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		rest := bytes.TrimLeft(data[end:], " \t\r\n") // JSON's whitespace
		at := int64(len(data) - len(rest))
		return nil, whole("must be a single JSON object, but data follows it at offset "+
			strconv.FormatInt(at, 10), nil)
	}
	return cfg, nil
}

// decodeObject consumes the members and closing brace of an object whose
// opening brace has been read.
func decodeObject(dec *json.Decoder, cfg *Config, path string) error {
	var errs []error
	reject := func(field, rule string) {
		errs = append(errs, &FieldError{Path: path, Field: field, Rule: rule})
	}
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return &FieldError{Path: path, Rule: syntaxRule(err), Err: err}
		}
		key, ok := tok.(string)
		if !ok { // unreachable: the decoder only yields string keys here
			return &FieldError{Path: path, Rule: "is not valid JSON: object key is not a string"}
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return &FieldError{Path: path, Rule: syntaxRule(err), Err: err}
		}
		if seen[key] {
			reject(displayKey(key), "is set more than once")
			continue
		}
		seen[key] = true
		decodeMember(cfg, key, raw, reject)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return &FieldError{Path: path, Rule: syntaxRule(err), Err: err}
	}
	return joinErrs(errs)
}

// decodeMember stores one option, or rejects it.
func decodeMember(cfg *Config, key string, raw json.RawMessage, reject func(field, rule string)) {
	isNull := string(raw) == "null"
	var dst **float64
	var want string
	switch key {
	case keyEnabled:
		switch string(raw) {
		case "true", "false":
			b := string(raw) == "true"
			cfg.Enabled = &b
		case "null":
		default:
			reject(key, "must be true or false, not "+rawKind(raw))
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
		reject(displayKey(key), "is not a reconnect option ("+unknownHint(key)+")")
		return
	}
	if isNull {
		return
	}
	if rawKind(raw) != "a number" {
		reject(key, "must be "+want+", not "+rawKind(raw))
		return
	}
	// The raw text is a valid JSON number. Out-of-range values come back
	// as ±Inf or 0 with ErrRange; keeping them lets Resolve report the
	// bound that was broken rather than a parse failure.
	f, _ := strconv.ParseFloat(string(raw), 64)
	*dst = &f
}

// displayKey quotes keys that would otherwise make the dotted path
// ambiguous or invisible (an empty key, a key with dots or spaces), so an
// unknown key in a message is always recognisable.
func displayKey(k string) string {
	if k == "" {
		return `""`
	}
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return strconv.Quote(k)
		}
	}
	return k
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

// rawKind names the JSON type of a valid raw value, from its first byte.
func rawKind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "empty"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// tokenKind names the JSON type of a top-level token that is not an object.
func tokenKind(tok json.Token) string {
	switch tok.(type) {
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	default: // the only other top-level token is '['
		return "an array"
	}
}

// syntaxRule words a decoding failure. The decoder's own text says what was
// unexpected; its offsets are not quoted because in token mode they count
// from the start of the current value, not of the document.
func syntaxRule(err error) string {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "is not valid JSON: unexpected end of input"
	}
	return "is not valid JSON: " + err.Error()
}
