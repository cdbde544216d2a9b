package compose

import (
	"path"
	"strings"
)

// PreflightRunDirs returns the --data-dir values of every `preflight
// run` in the command line args, each split at commas as
// PREFLIGHT_DATA_DIR is (preflight run keeps a comma of the flag's value
// in the path: the split names more directories, never fewer, and the
// policy's CEL splits alike) (an argument whose base name is preflight,
// then run, after any of preflight's global flags: --mountinfo FILE), up
// to its "--"; nil when there is none. A shell's command string
// (sh -c "exec preflight run --data-dir /data -- app") is read too: the
// arguments are also split into words at spaces, tabs and line breaks,
// quotes dropped.
func PreflightRunDirs(args []string) []string {
	out := runDirs(args)
	var words []string
	split := false
	for _, a := range args {
		w := strings.FieldsFunc(strings.NewReplacer(`"`, "", `'`, "").Replace(a), func(r rune) bool {
			return r == ' ' || r == '\t' || r == '\n' || r == '\r'
		})
		split = split || len(w) != 1 || w[0] != a
		words = append(words, w...)
	}
	if split {
		out = append(out, runDirs(words)...)
	}
	return out
}

// runDirs is PreflightRunDirs over args as they are.
func runDirs(args []string) []string {
	var out []string
	seen := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case path.Base(a) == "preflight":
			seen = false
			j := i + 1
			for j < len(args) && (args[j] == "--mountinfo" || strings.HasPrefix(args[j], "--mountinfo=")) {
				if args[j] == "--mountinfo" {
					j++
				}
				j++
			}
			if j < len(args) && args[j] == "run" {
				seen = true
				i = j
			}
		case !seen:
		case a == "--":
			seen = false
		case a == "--data-dir" && i+1 < len(args):
			out = append(out, strings.Split(args[i+1], ",")...)
			i++
		case strings.HasPrefix(a, "--data-dir="):
			out = append(out, strings.Split(strings.TrimPrefix(a, "--data-dir="), ",")...)
		}
	}
	return out
}
