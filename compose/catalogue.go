package compose

import (
	"path"
	"slices"
	"strings"
)

// App is one catalogue entry: an application image that keeps SQLite
// databases in known directories. The YAML format is documented at the top
// of catalogue.yaml.
type App struct {
	Name        string      `yaml:"name" json:"name"`
	Images      []string    `yaml:"images" json:"images"`
	DataDirs    []string    `yaml:"data_dirs" json:"data_dirs"`
	Databases   []string    `yaml:"databases" json:"databases,omitempty"`
	MovedBy     []EnvMove   `yaml:"moved_by" json:"moved_by,omitempty"`
	OtherEngine []EnvSwitch `yaml:"other_engine" json:"other_engine,omitempty"`
	Note        string      `yaml:"note" json:"note,omitempty"`
	Docs        string      `yaml:"docs" json:"docs"`
	// Source is where the application's documentation or code says where
	// its SQLite files live (a URL); required in the built-in catalogue.
	Source string `yaml:"source" json:"source,omitempty"`
}

// EnvMove is an environment setting that moves an application's data.
type EnvMove struct {
	Env string `yaml:"env" json:"env"`
	// Kind is "dir" (the value is the data directory) or "file" (the value
	// is the database file).
	Kind   string `yaml:"kind" json:"kind"`
	Suffix string `yaml:"suffix" json:"suffix,omitempty"`
}

// EnvSwitch is an environment setting that moves an application to
// another database engine.
type EnvSwitch struct {
	Env       string   `yaml:"env" json:"env"`
	Values    []string `yaml:"values" json:"values,omitempty"`
	NotValues []string `yaml:"not_values" json:"not_values,omitempty"`
	Prefixes  []string `yaml:"prefixes" json:"prefixes,omitempty"`
	Set       bool     `yaml:"set" json:"set,omitempty"`
	// Source is where the application's documentation or code says so
	// (a URL).
	Source string `yaml:"source" json:"source,omitempty"`
}

// Catalogue is an ordered list of apps; the first match wins.
type Catalogue struct {
	Apps []App `yaml:"apps"`
}

// Repository returns the repository part of an image reference: without
// registry host, tag, digest, and Docker Hub's "library/" prefix, lower
// case. "lscr.io/linuxserver/sonarr:latest" gives "linuxserver/sonarr",
// "postgres:16" gives "postgres".
func Repository(image string) string {
	s := strings.ToLower(strings.TrimSpace(image))
	if i := strings.Index(s, "@"); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndex(s, ":"); i >= 0 && !strings.Contains(s[i:], "/") {
		s = s[:i]
	}
	parts := strings.Split(s, "/")
	if len(parts) > 1 && (strings.ContainsAny(parts[0], ".:") || parts[0] == "localhost") {
		parts = parts[1:]
	}
	if len(parts) > 1 && parts[0] == "library" {
		parts = parts[1:]
	}
	return strings.Join(parts, "/")
}

// Match returns the first app whose images match image, or nil.
func (c *Catalogue) Match(image string) *App {
	app, _ := c.MatchHow(image)
	return app
}

// How an image matched a catalogue entry (MatchHow).
const (
	// MatchImage: the image's repository is one of the entry's images.
	MatchImage = "image"
	// MatchName: a path segment of the image's repository is the
	// application's name (argonptg/pocketbase for pocketbase), an image of
	// another publisher.
	MatchName = "name"
)

// MatchHow returns the app whose images match image (the first in order),
// else the first app whose name is a path segment of the image's
// repository, with how it matched (MatchImage, MatchName); nil and "" when
// none does. Entries without data directories (database servers, apps
// without SQLite) match by image only.
func (c *Catalogue) MatchHow(image string) (*App, string) {
	if c == nil || image == "" {
		return nil, ""
	}
	repo := Repository(image)
	for i := range c.Apps {
		for _, pat := range c.Apps[i].Images {
			pat = strings.ToLower(pat)
			if pat == repo || strings.HasSuffix(pat, "/*") && strings.HasPrefix(repo, strings.TrimSuffix(pat, "*")) {
				return &c.Apps[i], MatchImage
			}
		}
	}
	segs := strings.Split(repo, "/")
	for i := range c.Apps {
		a := &c.Apps[i]
		if len(a.DataDirs) == 0 || strings.ContainsAny(a.Name, " /") {
			continue
		}
		if slices.Contains(segs, strings.ToLower(a.Name)) {
			return a, MatchName
		}
	}
	return nil, ""
}

// Merge returns a catalogue with c's entries before base's.
func (c *Catalogue) Merge(base *Catalogue) *Catalogue {
	out := &Catalogue{}
	if c != nil {
		out.Apps = append(out.Apps, c.Apps...)
	}
	if base != nil {
		out.Apps = append(out.Apps, base.Apps...)
	}
	return out
}

// EngineSwitch returns the setting (NAME=value) that moves the app to
// another engine under env (the container's environment, as far as it is
// known: a variable whose value is unknown is absent), or "".
func (a *App) EngineSwitch(env map[string]string) string {
	for _, s := range a.OtherEngine {
		v := strings.TrimSpace(env[s.Env])
		if v == "" {
			continue
		}
		lv := strings.ToLower(v)
		other := s.Set
		for _, x := range s.Values {
			other = other || lv == strings.ToLower(x)
		}
		if len(s.NotValues) > 0 {
			in := false
			for _, x := range s.NotValues {
				in = in || lv == strings.ToLower(x)
			}
			other = other || !in
		}
		for _, p := range s.Prefixes {
			other = other || strings.HasPrefix(lv, strings.ToLower(p))
		}
		if other {
			return s.Env + "=" + v
		}
	}
	return ""
}

// DataDirsUnder returns the app's data directories under env, and the
// setting that moved them ("" when the defaults apply).
func (a *App) DataDirsUnder(env map[string]string) ([]string, string) {
	for _, m := range a.MovedBy {
		v := strings.TrimSpace(env[m.Env])
		if v == "" {
			continue
		}
		p := v
		for _, pre := range []string{"sqlite3://", "sqlite://", "file:"} {
			if strings.HasPrefix(strings.ToLower(p), pre) {
				p = p[len(pre):]
				break
			}
		}
		if i := strings.IndexByte(p, '?'); i >= 0 {
			p = p[:i]
		}
		for strings.HasPrefix(p, "//") {
			p = p[1:]
		}
		if !path.IsAbs(p) {
			continue // relative to the app's working directory: unknown
		}
		if m.Kind == "file" {
			p = path.Dir(p)
		}
		return []string{path.Clean(p + m.Suffix)}, m.Env + "=" + v
	}
	return a.DataDirs, ""
}
