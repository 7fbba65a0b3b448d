package toolsearch

import (
	"slices"
	"strings"
)

// synonymGroups are words that name the same thing in the tasks hosts
// ask about and in tool definitions: a query's word also searches for the
// other words of its groups, at half weight. Each group is general
// developer vocabulary, not the words of any one server.
var synonymGroups = [][]string{
	{"folder", "directory", "dir"},
	{"file", "document"},
	{"picture", "image", "photo", "png", "jpg", "jpeg", "media", "audio"},
	{"repo", "repository", "project"},
	{"bug", "issue", "ticket"},
	{"pr", "pull", "request"},
	{"remember", "memory", "store", "entity", "knowledge"},
	{"fact", "observation", "note"},
	{"link", "relation", "relationship"},
	{"forget", "delete", "remove", "drop", "erase"},
	{"find", "search", "look", "lookup", "query"},
	{"rename", "move"},
	{"show", "list", "get", "read", "view", "display"},
	{"save", "write", "create"},
	{"permitted", "allowed", "access", "permission"},
	{"account", "user", "people", "person"},
	{"commit", "push", "update"},
	{"approve", "review"},
	{"reply", "comment"},
	{"land", "merge"},
	{"waiting", "open", "pending"},
	{"history", "commits", "log"},
	{"compress", "gzip", "zip"},
	{"environment", "env", "variables"},
	{"copy", "fork", "clone"},
	{"modified", "metadata", "info", "size"},
	{"add", "sum", "plus", "total"},
	{"structure", "tree", "recursive", "nested"},
	{"checks", "status", "ci"},
}

var synonyms = func() map[string][]string {
	m := map[string][]string{}
	for _, g := range synonymGroups {
		for _, w := range g {
			for _, o := range g {
				if o != w && !slices.Contains(m[w], o) {
					m[w] = append(m[w], o)
				}
			}
		}
	}
	return m
}()

// expand is the other words of the groups of q's words, in order, each
// once, none of q's own.
func expand(q string) string {
	words := strings.Fields(strings.ToLower(q))
	seen := map[string]bool{}
	for _, w := range words {
		seen[strings.Trim(w, ".,;:!?'\"()")] = true
	}
	var out []string
	for _, w := range words {
		for _, o := range synonyms[strings.Trim(w, ".,;:!?'\"()")] {
			if !seen[o] {
				seen[o] = true
				out = append(out, o)
			}
		}
	}
	return strings.Join(out, " ")
}
