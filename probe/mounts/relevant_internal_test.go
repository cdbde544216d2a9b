package mounts

import "testing"

func TestRelevant(t *testing.T) {
	holding := []string{"/srv", "/elsewhere/real.db"}
	under := []string{"/srv/app/data"}
	for _, tt := range []struct {
		mp   string
		want bool
	}{
		{"/", true},
		{"/srv", true},                 // holds the parent
		{"/srv/app", true},             // holds the data directory
		{"/srv/app/data", true},        // the data directory itself
		{"/srv/app/data/app.db", true}, // a single-file bind inside it
		{"/srv/other", false},          // a sibling: below the parent only
		{"/srv/app/database", false},   // a string prefix, not a path prefix
		{"/elsewhere", true},           // holds a symlinked database
		{"/elsewhere/other", false},
		{"/mnt/a\\040b", true}, // escaped: always kept
	} {
		if got := relevant([]byte(tt.mp), holding, under); got != tt.want {
			t.Errorf("relevant(%q) = %v, want %v", tt.mp, got, tt.want)
		}
	}
}
