package policy_test

import "testing"

// FuzzParse checks that Parse never panics and always either returns a
// policy that passes Validate or an error matching ErrInvalid. The seed
// corpus lives in testdata/fuzz/FuzzParse; the f.Add seeds cover the
// shapes the decoder branches on.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `"x"`, `1`, `true`,
		`{"enabled":true,"initialDelayMs":500,"maxDelayMs":30000,"maxAttempts":10,"jitter":0.2}`,
		`{"maxAttempts":1e400}`, `{"initialDelayMs":-0}`, `{"a":{"b":[1,2,{}]}}`,
		`{"maxAttempts":1,"maxAttempts":1}`, `{"enabled":null} `, `{"jitter":1}{`,
		`{"probeIntervalMs":300000}`, `{"probeIntervalMs":-1}`, `{"probeIntervalMs":0.5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkParseContract(t, data)
	})
}
