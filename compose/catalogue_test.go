package compose_test

import (
	"net/url"
	"testing"

	"github.com/preflight-sqlite/preflight/compose"
)

// TestCatalogueSources: every built-in entry names where the application
// says its SQLite files live (or, for database servers, where their own
// storage is), as an https URL.
func TestCatalogueSources(t *testing.T) {
	c := compose.Builtin()
	if len(c.Apps) < 10 {
		t.Fatalf("Builtin() has %d entries, want at least 10", len(c.Apps))
	}
	for _, a := range c.Apps {
		u, err := url.Parse(a.Source)
		if a.Source == "" || err != nil || u.Scheme != "https" || u.Host == "" {
			t.Errorf("catalogue entry %q: source %q is not an https URL", a.Name, a.Source)
		}
	}
}

// TestCatalogueMatchHow: images are matched by repository first, then by
// the application's name as a segment of another publisher's repository
// path.
func TestCatalogueMatchHow(t *testing.T) {
	c := compose.Builtin()
	for _, tc := range []struct {
		image, app, how string
	}{
		{"ghcr.io/muchobien/pocketbase:0.22", "pocketbase", compose.MatchImage},
		{"argonptg/pocketbase:0.25.9", "pocketbase", compose.MatchName},
		{"ghcr.io/someone/tools/pocketbase", "pocketbase", compose.MatchName},
		{"hermes-agent", "hermes-agent", compose.MatchImage},
		{"nousresearch/hermes-agent:latest", "hermes-agent", compose.MatchImage},
		{"example/vaultwarden", "vaultwarden", compose.MatchName},
		{"bruceforce/vaultwarden-backup", "", ""},
		{"example/pocketbase-admin", "", ""},
		{"lscr.io/linuxserver/sonarr", "sonarr", compose.MatchImage},
		{"lscr.io/linuxserver/sabnzbd", "linuxserver.io image", compose.MatchImage},
		{"ghcr.io/hotio/prowlarr:release", "prowlarr", compose.MatchImage},
		{"ghcr.io/advplyr/audiobookshelf:2.17", "audiobookshelf", compose.MatchImage},
		{"lscr.io/linuxserver/plex", "plex", compose.MatchImage},
		{"fallenbagel/jellyseerr:latest", "jellyseerr", compose.MatchImage},
		{"nextcloud:29-apache", "nextcloud", compose.MatchImage},
		{"ghcr.io/blakeblackshear/frigate:stable", "frigate", compose.MatchImage},
		{"postgres:16", "not SQLite (database servers)", compose.MatchImage},
	} {
		app, how := c.MatchHow(tc.image)
		name := ""
		if app != nil {
			name = app.Name
		}
		if name != tc.app || how != tc.how {
			t.Errorf("MatchHow(%q) = %q, %q; want %q, %q", tc.image, name, how, tc.app, tc.how)
		}
	}
}
