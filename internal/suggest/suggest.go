// Package suggest finds the word a mistyped one was probably meant to be,
// for "did you mean" hints of config keys and command-line flags.
package suggest

import "strings"

// Closest returns the word of known that word was probably meant to be:
// one equal to it but for case, or else the nearest at most two edits
// away (and fewer edits than word has bytes). ok is false when none is
// close.
func Closest(word string, known []string) (best string, ok bool) {
	bestD := 3
	for _, k := range known {
		if strings.EqualFold(k, word) {
			return k, true
		}
		if d := Distance(strings.ToLower(word), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" && len(word) > bestD {
		return best, true
	}
	return "", false
}

// Distance is the Levenshtein distance of a and b, in bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
