package policy_test

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/policy"
)

func ptr[T any](v T) *T { return &v }

func TestResolveAccepts(t *testing.T) {
	tests := []struct {
		name string
		cfg  *policy.Config
		want policy.Policy
	}{
		{"nil is the default", nil, policy.Default()},
		{"empty is the default", &policy.Config{}, policy.Default()},
		{"explicit values", &policy.Config{Enabled: ptr(false), InitialDelayMs: ptr(100.0), MaxDelayMs: ptr(100.0), MaxAttempts: ptr(1.0), Jitter: ptr(0.5)},
			policy.Policy{InitialDelay: 100 * time.Millisecond, MaxDelay: 100 * time.Millisecond, MaxAttempts: 1, Jitter: 0.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := policy.Resolve(tt.cfg, path)
			if err != nil {
				t.Fatalf("Resolve() error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Resolve() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResolveRejectsNonFinite covers values that JSON cannot carry, so Parse
// never sees them, but a Config built in code can.
func TestResolveRejectsNonFinite(t *testing.T) {
	const p = path + "."
	delayRule := " must be a positive number of milliseconds no greater than 2147483647"
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name string
		cfg  policy.Config
		want string
	}{
		{"NaN initial", policy.Config{InitialDelayMs: &nan}, p + "initialDelayMs" + delayRule},
		{"+Inf initial", policy.Config{InitialDelayMs: &inf}, p + "initialDelayMs" + delayRule},
		{"-Inf max", policy.Config{MaxDelayMs: ptr(math.Inf(-1))}, p + "maxDelayMs" + delayRule},
		{"NaN max", policy.Config{MaxDelayMs: &nan}, p + "maxDelayMs" + delayRule},
		{"smallest positive ms is fractional", policy.Config{InitialDelayMs: ptr(math.SmallestNonzeroFloat64)}, p + "initialDelayMs must be a whole number of milliseconds"},
		{"NaN attempts", policy.Config{MaxAttempts: &nan}, p + "maxAttempts must be a positive integer"},
		{"+Inf attempts", policy.Config{MaxAttempts: &inf}, p + "maxAttempts must be a positive integer no greater than 2147483647"},
		{"NaN jitter", policy.Config{Jitter: &nan}, p + "jitter must be a number between 0 and 1"},
		{"+Inf jitter", policy.Config{Jitter: &inf}, p + "jitter must be a number between 0 and 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := policy.Resolve(&tt.cfg, path)
			if diff := cmp.Diff([]string{tt.want}, fieldMessages(t, err)); diff != "" {
				t.Errorf("Resolve() messages mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(policy.Policy{}, got); diff != "" {
				t.Errorf("Resolve() returned a policy with its error (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConfigMarshalRoundTrip checks that the JSON tags agree with the keys
// Parse accepts: a Config marshalled by encoding/json parses back to the
// policy Resolve makes of it.
func TestConfigMarshalRoundTrip(t *testing.T) {
	for _, cfg := range []policy.Config{
		{},
		{Enabled: ptr(false), InitialDelayMs: ptr(20.0), MaxDelayMs: ptr(4000.0), MaxAttempts: ptr(7.0), Jitter: ptr(0.25)},
	} {
		data, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		want, err := policy.Resolve(&cfg, path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := policy.Parse(data, path)
		if err != nil {
			t.Fatalf("Parse(%s) error: %v", data, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Parse(%s) mismatch (-want +got):\n%s", data, diff)
		}
	}
}
