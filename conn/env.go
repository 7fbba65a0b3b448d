package conn

import (
	"strings"
)

// credentialMarkers are the substrings that make an environment variable
// name credential-shaped (compared in upper case).
var credentialMarkers = []string{
	"TOKEN", "SECRET", "PASSWORD", "PASSWD", "API_KEY", "APIKEY", "ACCESS_KEY",
	"PRIVATE_KEY", "CREDENTIAL", "SESSION_KEY", "COOKIE",
}

// credentialWords are the '_'-separated words that make a name
// credential-shaped; as substrings they would catch innocent names
// (GIT_AUTHOR_NAME).
var credentialWords = []string{"AUTH", "PAT", "JWT", "BEARER"}

// IsCredentialName reports whether an environment variable name looks like it
// holds a credential: its upper-cased name contains one of TOKEN, SECRET,
// PASSWORD, PASSWD, API_KEY, APIKEY, ACCESS_KEY, PRIVATE_KEY, CREDENTIAL,
// SESSION_KEY or COOKIE, or has AUTH, PAT, JWT or BEARER as one of its
// '_'-separated words (NPM_AUTH, but not GIT_AUTHOR_NAME). Such variables of
// the host are not passed to stdio servers; pass what a server needs
// explicitly in [Stdio.Env].
func IsCredentialName(name string) bool {
	up := strings.ToUpper(name)
	for _, m := range credentialMarkers {
		if strings.Contains(up, m) {
			return true
		}
	}
	for w := range strings.SplitSeq(up, "_") {
		for _, c := range credentialWords {
			if w == c {
				return true
			}
		}
	}
	return false
}

// ChildEnv returns the environment for a stdio server: parent (in
// os.Environ form) without credential-shaped variables (see
// [IsCredentialName]), then extra, whose entries win over the parent's.
func ChildEnv(parent, extra []string) []string {
	out := make([]string, 0, len(parent)+len(extra))
	for _, kv := range parent {
		name, _, _ := strings.Cut(kv, "=")
		if name == "" || IsCredentialName(name) {
			continue
		}
		out = append(out, kv)
	}
	// os/exec keeps the last value of a duplicated name, so appending is
	// enough for extra to override.
	return append(out, extra...)
}
