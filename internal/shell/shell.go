// Package shell quotes words for the POSIX shell command lines preflight
// prints (remedies, recipes, migration plans).
package shell

import "strings"

// Quote returns s as one POSIX shell word: unchanged when it holds only
// letters, digits and / . - _ : =, else in single quotes (a single quote
// inside becomes '\”).
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	for _, c := range s {
		if !(c == '/' || c == '.' || c == '-' || c == '_' || c == ':' || c == '=' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
