package policy_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/policy"
)

const path = "servers.fs.reconnect"

func TestParseAccepts(t *testing.T) {
	def := policy.Default()
	tests := []struct {
		name, in string
		want     policy.Policy
	}{
		{"empty object is the default", `{}`, def},
		{"null document is the default", `null`, def},
		{"null options are defaults", `{"enabled":null,"initialDelayMs":null,"maxDelayMs":null,"maxAttempts":null,"jitter":null}`, def},
		{"surrounding whitespace", " \n\t{ } \r\n", def},
		{"every option", `{"enabled":false,"initialDelayMs":250,"maxDelayMs":60000,"maxAttempts":3,"jitter":0.2}`,
			policy.Policy{Enabled: false, InitialDelay: 250 * time.Millisecond, MaxDelay: time.Minute, MaxAttempts: 3, Jitter: 0.2}},
		{"partial keeps other defaults", `{"maxAttempts":5}`,
			policy.Policy{Enabled: true, InitialDelay: 500 * time.Millisecond, MaxDelay: 30 * time.Second, MaxAttempts: 5}},
		{"exponent and trailing zero fraction are integers", `{"maxDelayMs":6e4,"maxAttempts":2.0}`,
			policy.Policy{Enabled: true, InitialDelay: 500 * time.Millisecond, MaxDelay: time.Minute, MaxAttempts: 2}},
		{"bounds inclusive", `{"initialDelayMs":2147483647,"maxDelayMs":2147483647,"maxAttempts":2147483647,"jitter":1}`,
			policy.Policy{Enabled: true, InitialDelay: policy.DelayLimit, MaxDelay: policy.DelayLimit, MaxAttempts: policy.AttemptsLimit, Jitter: 1}},
		{"probe interval", `{"probeIntervalMs":300000}`,
			policy.Policy{Enabled: true, InitialDelay: 500 * time.Millisecond, MaxDelay: 30 * time.Second, MaxAttempts: 10, ProbeInterval: 5 * time.Minute}},
		{"probe interval zero is off", `{"probeIntervalMs":0}`, def},
		{"probe interval at the limit", `{"probeIntervalMs":2147483647}`,
			policy.Policy{Enabled: true, InitialDelay: 500 * time.Millisecond, MaxDelay: 30 * time.Second, MaxAttempts: 10, ProbeInterval: policy.DelayLimit}},
		{"lowest bounds", `{"initialDelayMs":1,"maxDelayMs":1,"maxAttempts":1,"jitter":0}`,
			policy.Policy{Enabled: true, InitialDelay: time.Millisecond, MaxDelay: time.Millisecond, MaxAttempts: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := policy.Parse([]byte(tt.in), path)
			if err != nil {
				t.Fatalf("Parse(%s) error: %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse(%s) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	const (
		delayRule = " must be a positive number of milliseconds no greater than 2147483647"
		known     = " is not a reconnect option (known options: enabled, initialDelayMs, maxDelayMs, maxAttempts, jitter, probeIntervalMs)"
		p         = path + "."
	)
	tests := []struct {
		name, in string
		want     []string
	}{
		// Bounds.
		{"zero initial", `{"initialDelayMs":0}`, []string{p + "initialDelayMs" + delayRule}},
		{"negative initial", `{"initialDelayMs":-1}`, []string{p + "initialDelayMs" + delayRule}},
		{"initial above limit", `{"initialDelayMs":2147483648,"maxDelayMs":2147483647}`, []string{p + "initialDelayMs" + delayRule}},
		{"max above limit", `{"maxDelayMs":2147483648}`, []string{p + "maxDelayMs" + delayRule}},
		{"number overflowing float64", `{"maxDelayMs":1e400}`, []string{p + "maxDelayMs" + delayRule}},
		{"number underflowing to zero", `{"maxDelayMs":1e-400}`, []string{p + "maxDelayMs" + delayRule}},
		{"fractional ms", `{"initialDelayMs":2.5}`, []string{p + "initialDelayMs must be a whole number of milliseconds"}},
		{"initial above max", `{"initialDelayMs":5000,"maxDelayMs":1000}`, []string{p + "initialDelayMs must be less than or equal to maxDelayMs"}},
		{"max below default initial", `{"maxDelayMs":100}`,
			[]string{p + "initialDelayMs must be less than or equal to maxDelayMs (initialDelayMs defaults to 500; set it explicitly)"}},
		{"initial above default max", `{"initialDelayMs":60000}`,
			[]string{p + "initialDelayMs must be less than or equal to maxDelayMs (maxDelayMs defaults to 30000; set it explicitly)"}},
		{"negative probe", `{"probeIntervalMs":-1}`, []string{p + "probeIntervalMs must be 0 (no probing) or a positive number of milliseconds no greater than 2147483647"}},
		{"probe above limit", `{"probeIntervalMs":2147483648}`, []string{p + "probeIntervalMs must be 0 (no probing) or a positive number of milliseconds no greater than 2147483647"}},
		{"fractional probe", `{"probeIntervalMs":0.5}`, []string{p + "probeIntervalMs must be a whole number of milliseconds"}},
		{"probe of the wrong type", `{"probeIntervalMs":"5m"}`, []string{p + "probeIntervalMs must be a number of milliseconds, not a string"}},
		{"zero attempts", `{"maxAttempts":0}`, []string{p + "maxAttempts must be a positive integer"}},
		{"negative attempts", `{"maxAttempts":-3}`, []string{p + "maxAttempts must be a positive integer"}},
		{"fractional attempts", `{"maxAttempts":2.5}`, []string{p + "maxAttempts must be a positive integer"}},
		{"attempts above limit", `{"maxAttempts":2147483648}`, []string{p + "maxAttempts must be a positive integer no greater than 2147483647"}},
		{"negative jitter", `{"jitter":-0.5}`, []string{p + "jitter must be a number between 0 and 1"}},
		{"jitter above 1", `{"jitter":1.5}`, []string{p + "jitter must be a number between 0 and 1"}},
		{"every bound at once", `{"initialDelayMs":0,"maxDelayMs":-1,"maxAttempts":0.5,"jitter":2}`, []string{
			p + "initialDelayMs" + delayRule, p + "maxDelayMs" + delayRule,
			p + "maxAttempts must be a positive integer", p + "jitter must be a number between 0 and 1"}},
		// Keys.
		{"unknown key", `{"retries":3}`, []string{p + "retries" + known}},
		{"unknown keys in document order", `{"zeta":1,"maxAttempts":2,"alpha":1}`, []string{p + "zeta" + known, p + "alpha" + known}},
		{"wrong case", `{"InitialDelayMs":500}`, []string{p + "InitialDelayMs is not a reconnect option (did you mean initialDelayMs?)"}},
		{"odd key is quoted", `{"a.b c":1}`, []string{p + `"a.b c"` + known}},
		{"empty key is quoted", `{"":1}`, []string{p + `""` + known}},
		{"duplicate key", `{"maxAttempts":1,"maxAttempts":2}`, []string{p + "maxAttempts is set more than once"}},
		// Types.
		{"enabled as string", `{"enabled":"yes"}`, []string{p + "enabled must be true or false, not a string"}},
		{"enabled as number", `{"enabled":1}`, []string{p + "enabled must be true or false, not a number"}},
		{"delay as string", `{"maxDelayMs":"30s"}`, []string{p + "maxDelayMs must be a number of milliseconds, not a string"}},
		{"delay as object", `{"initialDelayMs":{}}`, []string{p + "initialDelayMs must be a number of milliseconds, not an object"}},
		{"attempts as boolean", `{"maxAttempts":true}`, []string{p + "maxAttempts must be a positive integer, not a boolean"}},
		{"jitter as array", `{"jitter":[0.1]}`, []string{p + "jitter must be a number between 0 and 1, not an array"}},
		{"type errors hide cross-field noise", `{"initialDelayMs":60000,"maxDelayMs":"1m"}`,
			[]string{p + "maxDelayMs must be a number of milliseconds, not a string"}},
		// Document shape.
		{"empty input", ``, []string{path + " must be a JSON object, but the input is empty"}},
		{"whitespace only", "  \n", []string{path + " must be a JSON object, but the input is empty"}},
		{"array document", `[]`, []string{path + " must be a JSON object, not an array"}},
		{"number document", `42`, []string{path + " must be a JSON object, not a number"}},
		{"string document", `"on"`, []string{path + " must be a JSON object, not a string"}},
		{"boolean document", `true`, []string{path + " must be a JSON object, not a boolean"}},
		{"trailing garbage", `{"maxAttempts":3} x`, []string{path + " must be a single JSON object, but data follows it at offset 18"}},
		{"two objects", `{}{}`, []string{path + " must be a single JSON object, but data follows it at offset 2"}},
		{"trailing brace", `{}}`, []string{path + " must be a single JSON object, but data follows it at offset 2"}},
		{"null then data", `null 1`, []string{path + " must be a single JSON object, but data follows it at offset 5"}},
		{"truncated", `{"maxAttempts":`, []string{path + " is not valid JSON: unexpected end of input"}},
		{"syntax error", `{"maxAttempts" 3}`, []string{path + " is not valid JSON: invalid character '3' after object key"}},
		{"bad literal", `{"enabled":yes}`, []string{path + " is not valid JSON: invalid character 'y' looking for beginning of value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := policy.Parse([]byte(tt.in), path)
			if err == nil {
				t.Fatalf("Parse(%s) = %+v, want an error", tt.in, got)
			}
			if diff := cmp.Diff(tt.want, fieldMessages(t, err)); diff != "" {
				t.Errorf("Parse(%s) messages mismatch (-want +got):\n%s", tt.in, diff)
			}
			if diff := cmp.Diff(policy.Policy{}, got); diff != "" {
				t.Errorf("Parse(%s) returned a policy with its error (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseErrorFields(t *testing.T) {
	_, err := policy.Parse([]byte(`{"maxAttempts":2.5}`), path)
	var fe *policy.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("Parse error %v holds no *FieldError", err)
	}
	want := policy.FieldError{Path: path, Field: "maxAttempts", Rule: "must be a positive integer"}
	if diff := cmp.Diff(want, *fe); diff != "" {
		t.Errorf("FieldError mismatch (-want +got):\n%s", diff)
	}
}

func TestParseSyntaxErrorUnwraps(t *testing.T) {
	_, err := policy.Parse([]byte(`{"enabled":yes}`), path)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("Parse error %v does not unwrap to *json.SyntaxError", err)
	}
	if !errors.Is(err, policy.ErrInvalid) {
		t.Errorf("Parse error %v does not match ErrInvalid", err)
	}
}

func TestParseEmptyPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"maxAttempts":0}`, "maxAttempts must be a positive integer"},
		{`{"retries":1}`, "retries is not a reconnect option (known options: enabled, initialDelayMs, maxDelayMs, maxAttempts, jitter, probeIntervalMs)"},
		{`[]`, "reconnect config must be a JSON object, not an array"},
	}
	for _, tt := range tests {
		_, err := policy.Parse([]byte(tt.in), "")
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%s, \"\") error = %v, want %q", tt.in, err, tt.want)
		}
	}
}
