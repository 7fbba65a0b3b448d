package redact

import (
	"net/url"
	"slices"
	"strings"
)

// credentialMarkers are the substrings that make a variable name
// credential-shaped (compared in upper case).
var credentialMarkers = []string{
	"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "API_KEY", "APIKEY", "ACCESS_KEY",
	"PRIVATE_KEY", "CREDENTIAL", "SESSION_KEY", "COOKIE",
}

// credentialWords are the '_'-separated words that make a name
// credential-shaped; as substrings they would catch innocent names
// (GIT_AUTHOR_NAME, COMPASS_HOME, KEYBOARD).
var credentialWords = []string{"AUTH", "PAT", "JWT", "BEARER", "PASS", "PWD", "KEY", "DSN"}

// IsCredentialName reports whether an environment variable name looks like
// it holds a credential: its upper-cased name contains one of TOKEN,
// SECRET, PASSWORD, PASSWD, PASSPHRASE, API_KEY, APIKEY, ACCESS_KEY,
// PRIVATE_KEY, CREDENTIAL, SESSION_KEY or COOKIE, or has AUTH, PAT, JWT,
// BEARER, PASS, PWD, KEY or DSN as one of its '_'-separated words
// (NPM_AUTH, MYSQL_PWD, SENTRY_DSN, OPENAI_KEY; but not GIT_AUTHOR_NAME,
// nor PWD, the working directory).
func IsCredentialName(name string) bool {
	up := strings.ToUpper(name)
	if up == "PWD" || up == "OLDPWD" {
		return false // the shell's working directories
	}
	for _, m := range credentialMarkers {
		if strings.Contains(up, m) {
			return true
		}
	}
	for w := range strings.SplitSeq(up, "_") {
		if slices.Contains(credentialWords, w) {
			return true
		}
	}
	return false
}

// HasURLPassword reports whether a value is a URL with a password in it,
// such as postgres://app:s3cret@db/app: innocent names (DATABASE_URL,
// REDIS_URL) often hold one.
func HasURLPassword(value string) bool {
	if !strings.Contains(value, "://") {
		return false
	}
	u, err := url.Parse(strings.TrimSpace(value))
	if err != nil || u.User == nil {
		return false
	}
	_, ok := u.User.Password()
	return ok
}

// isSecretKey is IsCredentialName for the names of free text, where
// header names use '-' (X-Api-Key) and an Authorization header names no
// credential word of its own.
func isSecretKey(name string) bool {
	n := strings.ReplaceAll(name, "-", "_")
	up := strings.ToUpper(n)
	return IsCredentialName(n) || strings.HasSuffix(up, "AUTHORIZATION")
}
