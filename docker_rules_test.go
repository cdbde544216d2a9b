package preflight_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/docker"
)

// docker-unreachable is one short line, and only where the answer matters:
// with no database there is nothing another container could be writing
// (unless --docker required). A DOCKER_HOST socket that does not exist is
// unreachable, not "no engine".
func TestDockerUnreachableOnlyWhenItMatters(t *testing.T) {
	sock := "unix://" + filepath.Join(t.TempDir(), "docker.sock")
	env := func(k string) string {
		if k == "DOCKER_HOST" {
			return sock
		}
		return ""
	}
	empty, withDB := t.TempDir(), t.TempDir()
	testdb.Make(t, filepath.Join(withDB, "app.db"), "wal", 1)
	for _, tc := range []struct {
		name, dir string
		mode      docker.Mode
		want      string // level, "" for no finding
	}{
		{"no database", empty, docker.ModeAuto, ""},
		{"database", withDB, docker.ModeAuto, "info"},
		{"no database, required", empty, docker.ModeRequired, "error"},
	} {
		r, err := preflight.Check(context.Background(), preflight.Options{
			Paths:   []string{tc.dir},
			Writers: preflight.WriterOptions{Starting: true, Docker: docker.Options{Mode: tc.mode, Env: env}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if r.Docker == nil || r.Docker.Status != docker.StatusUnreachable || r.Docker.Sure {
			t.Errorf("%s: docker = %+v, want unreachable, not sure", tc.name, r.Docker)
		}
		var got []preflight.Finding
		for _, f := range r.Findings {
			if f.ID == "docker-unreachable" {
				got = append(got, f)
			}
		}
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: docker-unreachable %+v, want none", tc.name, got)
		case tc.want == "":
		case len(got) != 1 || string(got[0].Level) != tc.want:
			t.Errorf("%s: docker-unreachable findings %+v, want one at %s", tc.name, got, tc.want)
		default:
			line := got[0].Message + "; fix: " + strings.Join(got[0].Remedy, " | ")
			if n := len(line) - len(sock); n > 200 {
				t.Errorf("%s: docker-unreachable is %d characters besides the socket path, want one short line: %s", tc.name, n, line)
			}
			if !strings.Contains(got[0].Message, sock) {
				t.Errorf("%s: docker-unreachable %q does not name the socket %s", tc.name, got[0].Message, sock)
			}
		}
	}
}
