package rules

import "fmt"

// reportRules judge the report as a whole (the mount table it was
// classified with), once per report.
var reportRules = []rule{
	{
		Rule: Rule{MountTableSkippedLines, LevelWarn, "lines of a --mountinfo file fit no known format and were skipped"}, scope: ScopeReport,
		match: func(s subject) (string, Level, bool) {
			if s.r.MountTable.Skipped == 0 {
				return "", "", false
			}
			return fmt.Sprintf("%s of %s %s no mount table format and %s skipped", count(s.r.MountTable.Skipped, "line", "lines"), s.r.MountTable.Source, plural(s.r.MountTable.Skipped, "fits", "fit"), plural(s.r.MountTable.Skipped, "was", "were")), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Paste the table as printed by cat /proc/self/mountinfo, cat /proc/mounts, mount or findmnt, without other output."}
		},
	},
}
