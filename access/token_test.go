package access

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodToken = "0123456789abcdef0123456789abcdef"

func TestCheckToken(t *testing.T) {
	for _, tc := range []struct {
		tok   string
		short bool
		ok    bool
	}{
		{goodToken, false, true},
		{"0123456789abcdef", false, true}, // exactly MinTokenLen
		{"s3cret", true, false},
		{"", true, false},
		{"0123456789abcdef 0123", false, false},
		{"0123456789abcdef\x01", false, false},
	} {
		err := CheckToken(tc.tok)
		if (err == nil) != tc.ok {
			t.Errorf("CheckToken(%q) = %v, want ok=%v", tc.tok, err, tc.ok)
		}
		if errors.Is(err, ErrShortToken) != tc.short {
			t.Errorf("CheckToken(%q) = %v, want ErrShortToken=%v", tc.tok, err, tc.short)
		}
		if tc.short && !strings.Contains(err.Error(), "openssl rand -hex 32") {
			t.Errorf("CheckToken(%q) = %v, want the fix named", tc.tok, err)
		}
		if err != nil && tc.tok != "" && strings.Contains(err.Error(), tc.tok) {
			t.Errorf("CheckToken's error %q shows the token", err)
		}
	}
}

// TestWeakTokenRefused: a token long enough but made of repetition is
// refused as weak, naming the fix; random ones of the least length pass.
func TestWeakTokenRefused(t *testing.T) {
	for _, tok := range []string{strings.Repeat("a", 16), strings.Repeat("ab", 8), "passwordpassword", strings.Repeat("abcd", 8), strings.Repeat("0", 64)} {
		err := CheckToken(tok)
		if !errors.Is(err, ErrWeakToken) || !strings.Contains(err.Error(), "openssl rand -hex 32") || strings.Contains(err.Error(), tok) {
			t.Errorf("CheckToken(%q) = %v, want ErrWeakToken naming the fix, without the token", tok, err)
		}
	}
	for _, tok := range []string{"3f9a0c7e21b4d85a", "Zq8_fK2m-Xw7LpQe", goodToken} {
		if err := CheckToken(tok); err != nil {
			t.Errorf("CheckToken(%q) = %v, want accepted", tok, err)
		}
	}
	if b := TokenBits(strings.Repeat("a", 16)); b != 0 {
		t.Errorf("TokenBits(16 × a) = %v, want 0", b)
	}
}

func TestLoadToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	other := "fedcba9876543210fedcba9876543210"
	for _, tc := range []struct {
		name    string
		file    string
		env     map[string]string
		want    string
		errWith string // "" = no error
	}{
		{"file with newline", write("tok", goodToken+"\n", 0o600), map[string]string{EnvToken: other}, goodToken, ""},
		{"file with CRLF", write("crlf", goodToken+"\r\n", 0o400), nil, goodToken, ""},
		{"env", "", map[string]string{EnvToken: goodToken, EnvLegacyToken: other}, goodToken, ""},
		{"legacy env", "", map[string]string{EnvLegacyToken: goodToken}, goodToken, ""},
		{"none", "", nil, "", ""},
		{"readable by others", write("open", goodToken, 0o644), nil, "", "chmod 600"},
		{"missing file", filepath.Join(dir, "nope"), nil, "", filepath.Join(dir, "nope")},
		{"short in file", write("short", "s3cret\n", 0o600), nil, "", filepath.Join(dir, "short")},
		{"short in env", "", map[string]string{EnvToken: "s3cret"}, "", EnvToken},
		{"short legacy env", "", map[string]string{EnvLegacyToken: "s3cret"}, "", EnvLegacyToken},
	} {
		got, err := LoadToken(tc.file, env(tc.env))
		if tc.errWith == "" {
			if err != nil || got != tc.want {
				t.Errorf("%s: LoadToken = %q, %v; want %q", tc.name, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.errWith) {
			t.Errorf("%s: LoadToken error %v, want one naming %q", tc.name, err, tc.errWith)
			continue
		}
		for _, secret := range []string{goodToken, "s3cret"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: the error %q shows the token", tc.name, err)
			}
		}
	}
}

// TestTokenNeverInErrors feeds the token to every constructor that takes
// one, with something else wrong, and looks for it in the errors.
func TestTokenNeverInErrors(t *testing.T) {
	secret := "sh0rt-s3cret"
	var errs []error
	_, err := New(Config{Token: secret})
	errs = append(errs, err)
	_, err = New(Config{Token: goodToken, AllowOrigins: []string{"evil"}})
	errs = append(errs, err)
	_, err = New(Config{Token: goodToken, OAuth: &OAuth{Issuer: "http://auth.example", ResourceURL: "https://mcp.example/mcp"}})
	errs = append(errs, err)
	_, err = LoadToken("", func(string) string { return secret })
	errs = append(errs, err)
	for i, err := range errs {
		if err == nil {
			t.Errorf("case %d: no error", i)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), goodToken) {
			t.Errorf("case %d: %q shows the token", i, err)
		}
	}
}
