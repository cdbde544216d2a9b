package compose_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/probe/mounts"
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
		for _, o := range a.OtherEngine {
			if u, err := url.Parse(o.Source); o.Source != "" && (err != nil || u.Scheme != "https" || u.Host == "") {
				t.Errorf("catalogue entry %q: other_engine %s source %q is not an https URL", a.Name, o.Env, o.Source)
			}
		}
	}
	sourced := map[string]string{"homebox": "HBOX_DATABASE_DRIVER", "gitea": "GITEA__database__DB_TYPE", "vaultwarden": "DATABASE_URL"}
	for _, a := range c.Apps {
		for _, o := range a.OtherEngine {
			if sourced[a.Name] == o.Env && o.Source != "" {
				delete(sourced, a.Name)
			}
		}
	}
	if len(sourced) > 0 {
		t.Errorf("catalogue: other_engine settings without a source: %v", sourced)
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

// TestCatalogueSettings: the restored entries' environment settings do
// what their sources say. Bazarr is on PostgreSQL only for
// POSTGRES_ENABLED=true (bazarr/app/database.py compares with "true");
// Pocket ID picks its engine by the scheme of DB_CONNECTION_STRING;
// Homebox and Drone move the database file; a relative SQLite path is
// left at the image's directory.
func TestCatalogueSettings(t *testing.T) {
	dir := t.TempDir()
	text := `services:
  bazarr-one:
    image: lscr.io/linuxserver/bazarr
    environment: {POSTGRES_ENABLED: "1"}
    volumes: [bz1:/config]
  bazarr-pg:
    image: lscr.io/linuxserver/bazarr
    environment: {POSTGRES_ENABLED: "True"}
    volumes: [bz2:/config]
  pocket-pg:
    image: ghcr.io/pocket-id/pocket-id
    environment: {DB_CONNECTION_STRING: "postgresql://u:p@db/pocket"}
    volumes: [pid1:/app/data]
  pocket-file:
    image: ghcr.io/pocket-id/pocket-id
    environment: {DB_CONNECTION_STRING: "file:data/pocket-id.db?_pragma=journal_mode(WAL)"}
    volumes: [pid2:/app/data]
  homebox:
    image: ghcr.io/sysadminsmedia/homebox
    environment: {HBOX_DATABASE_SQLITE_PATH: "/srv/hb/homebox.db?_pragma=busy_timeout=2000"}
    volumes: [hbox:/srv/hb]
  drone:
    image: drone/drone:2
    environment: {DRONE_DATABASE_DATASOURCE: /var/drone/database.sqlite}
    volumes: [drone:/var/drone]
  homebox-pg:
    image: ghcr.io/sysadminsmedia/homebox
    env_file: homebox.env
    volumes: [hbox2:/data]
  gitea-mysql:
    image: gitea/gitea:1.22
    env_file: [gitea.env]
    environment: {GITEA__database__HOST: "db:3306"}
    volumes: [gitea:/data]
volumes: {bz1: {}, bz2: {}, pid1: {}, pid2: {}, hbox: {}, drone: {}, hbox2: {}, gitea: {}}
`
	file := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"homebox.env": "HBOX_DATABASE_DRIVER=postgres\nHBOX_DATABASE_HOST=db\n", "gitea.env": "GITEA__database__DB_TYPE=mysql\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := compose.Load(context.Background(), compose.LoadOptions{Files: []string{file}, Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := compose.Analyze(context.Background(), l, compose.Options{Platform: "linux", NoDisk: true, HostMounts: &mounts.Table{}})
	if err != nil {
		t.Fatal(err)
	}
	type got struct{ other, moved string }
	want := map[string]got{
		"bazarr-one":  {"", ""},
		"bazarr-pg":   {"POSTGRES_ENABLED=True", ""},
		"pocket-pg":   {"DB_CONNECTION_STRING=postgresql://u:p@db/pocket", ""},
		"pocket-file": {"", ""},
		"homebox":     {"", "HBOX_DATABASE_SQLITE_PATH=/srv/hb/homebox.db?_pragma=busy_timeout=2000"},
		"drone":       {"", "DRONE_DATABASE_DATASOURCE=/var/drone/database.sqlite"},
		"homebox-pg":  {"HBOX_DATABASE_DRIVER=postgres", ""}, // from env_file, as compose-go loads it
		"gitea-mysql": {"GITEA__database__DB_TYPE=mysql", ""},
	}
	seen := map[string]bool{}
	for _, m := range a.Mounts {
		w, ok := want[m.Service]
		if !ok {
			continue
		}
		seen[m.Service] = true
		if m.App == nil {
			t.Errorf("service %s: no catalogue entry", m.Service)
			continue
		}
		if m.App.OtherEngine != w.other || m.App.MovedBy != w.moved {
			t.Errorf("service %s (%s): other engine %q, moved by %q; want %q, %q", m.Service, m.App.Name, m.App.OtherEngine, m.App.MovedBy, w.other, w.moved)
		}
	}
	for s := range want {
		if !seen[s] {
			t.Errorf("service %s: no mount in the analysis", s)
		}
	}
}
