package config

import "fmt"

// stripJSONC turns JSON with comments (JSONC, as VS Code, Cursor and Claude
// Code read their files) into plain JSON: it blanks // and /* */ comments
// and commas that trail the last element of an object or array. Blanked
// bytes become spaces and newlines stay, so every byte keeps its offset,
// and a later syntax error names the line and column of the original file.
// A UTF-8 byte order mark is blanked too. Strings are copied untouched.
func stripJSONC(data []byte) ([]byte, error) {
	out := make([]byte, len(data))
	copy(out, data)
	if len(out) >= 3 && out[0] == 0xEF && out[1] == 0xBB && out[2] == 0xBF {
		out[0], out[1], out[2] = ' ', ' ', ' '
	}
	// Pass 1: comments. Only bytes outside strings are inspected.
	inString := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		if inString {
			switch c {
			case '\\':
				i++ // skip the escaped byte, whatever it is
			case '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				if out[i] != '\r' {
					out[i] = ' '
				}
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			start := i
			out[i], out[i+1] = ' ', ' '
			i += 2
			for ; i+1 < len(out) && !(out[i] == '*' && out[i+1] == '/'); i++ {
				if out[i] != '\n' && out[i] != '\r' {
					out[i] = ' '
				}
			}
			if i+1 >= len(out) {
				line, col := position(data, start)
				return nil, fmt.Errorf("config is not valid JSON: line %d, column %d: a /* comment is never closed with */", line, col)
			}
			out[i], out[i+1] = ' ', ' '
			i++
		}
	}
	// Pass 2: trailing commas, now that comments are whitespace.
	inString = false
	for i := 0; i < len(out); i++ {
		c := out[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case ',':
			if k := lastNonSpace(out, i); k < 0 || out[k] == '{' || out[k] == '[' || out[k] == ',' {
				continue // not after an element: leave it for the JSON error
			}
			j := i + 1
			for j < len(out) && isSpace(out[j]) {
				j++
			}
			if j < len(out) && (out[j] == '}' || out[j] == ']') {
				out[i] = ' '
			}
		}
	}
	return out, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// lastNonSpace is the index of the last non-space byte before i, or -1.
func lastNonSpace(b []byte, i int) int {
	for i--; i >= 0 && isSpace(b[i]); i-- {
	}
	return i
}
