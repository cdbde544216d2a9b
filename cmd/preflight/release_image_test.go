package main

import "testing"

// TestReleaseImage: a release's version names its image on ghcr.io, tagged
// without the v as the release workflow tags it; any other version (a
// development build, go install of a commit, git describe past a tag, a
// snapshot) names none.
func TestReleaseImage(t *testing.T) {
	for _, tc := range []struct{ version, want string }{
		{"v0.2.0", "ghcr.io/preflight-sqlite/preflight:0.2.0"},
		{"v1.10.3", "ghcr.io/preflight-sqlite/preflight:1.10.3"},
		{"v1.2.0-rc.1", "ghcr.io/preflight-sqlite/preflight:1.2.0-rc.1"},
		{"", ""},
		{"devel", ""},
		{"(devel)", ""},
		{"0.2.0", ""},
		{"v0.2", ""},
		{"v0.2.0+dirty", ""},
		{"v0.0.0-20261202021925-ea6807712345", ""},
		{"v0.2.1-0.20261202021925-ea6807712345", ""},
		{"v0.2.1-0.20261202021925-ea6807712345+dirty", ""},
		{"v0.2.0-3-gea68077", ""},
		{"v0.2.0-3-gea68077-dirty", ""},
		{"v0.2.0-dirty", ""},
		{"v0.2.1-snapshot-ea68077", ""},
		{"ea68077", ""},
	} {
		if got := releaseImage(tc.version); got != tc.want {
			t.Errorf("releaseImage(%q) = %q, want %q", tc.version, got, tc.want)
		}
	}
}
