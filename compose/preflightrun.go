package compose

import (
	"path"
	"strings"
)

// PreflightRunDirs returns the --data-dir values (each a
// comma-separated list, as preflight run reads them) of every `preflight
// run` in the command line args (an argument whose base name is preflight,
// then run), up to its "--"; nil when there is none.
func PreflightRunDirs(args []string) []string {
	var out []string
	seen := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case path.Base(a) == "preflight":
			seen = false
			if i+1 < len(args) && args[i+1] == "run" {
				seen = true
				i++
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
