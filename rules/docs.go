package rules

import (
	"slices"

	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/manifest"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// DocsURL is the documentation site; each finding has an anchor of its ID
// on FindingsURL's page (docs/reference/findings.md, generated from this
// table).
const DocsURL = "https://preflight-sqlite.github.io/preflight/"

// FindingURL is the address of finding id's entry in the findings
// reference.
func FindingURL(id ID) string { return DocsURL + "reference/findings/#" + string(id) }

// Anchor is the entry's anchor on the findings page: its ID, and for a
// refusal "refusal-" and its ID (a finding and a refusal of the same fact
// share a name).
func (e Entry) Anchor() string {
	if e.Refusal {
		return "refusal-" + string(e.ID)
	}
	return string(e.ID)
}

// URL is the address of the entry in the findings reference.
func (e Entry) URL() string { return DocsURL + "reference/findings/#" + e.Anchor() }

// Entry is one finding or refusal as the reference shows it: the rule,
// the commands that raise it and its remedy as preflight prints it for
// ExamplePath.
type Entry struct {
	Rule
	// Refusal: a reason convert refuses (or notes), not a finding.
	Refusal bool
	// Commands raise the finding (check and run evaluate the data
	// directory rules; convert's guard too).
	Commands []string
	// Remedy is the remedy printed for the example subject: a WAL
	// database at ExamplePath on a Docker Desktop bind mount; nil when the
	// remedy depends on facts the example does not have (a refusal's is
	// in its message).
	Remedy []string
}

// ExamplePath is the database the reference's remedies are written for;
// ExampleCase says what the example is.
const (
	ExamplePath = "/data/app.db"
	ExampleCase = "a WAL database " + ExamplePath + " on a Docker Desktop bind mount; for compose, service app binding /Users/me/app/data to /data; for kube, Deployment default/app"
)

// Entries lists every finding (Rules) then every refusal (Refusals) with
// its commands and example remedy, in table order.
func Entries() []Entry {
	var out []Entry
	for _, refusal := range []bool{false, true} {
		seen := map[ID]int{}
		for _, r := range table {
			if (r.scope == ScopeConvert) != refusal {
				continue
			}
			cmds := scopeCommands[r.scope]
			if r.commands != nil {
				cmds = r.commands
			}
			if i, ok := seen[r.ID]; ok {
				// One ID in several scopes (replicas-on-sqlite-claim of
				// the in-pod probe and of manifests): every command.
				for _, c := range cmds {
					if !slices.Contains(out[i].Commands, c) {
						out[i].Commands = append(out[i].Commands, c)
					}
				}
				continue
			}
			seen[r.ID] = len(out)
			out = append(out, Entry{Rule: r.Rule, Refusal: refusal, Commands: slices.Clone(cmds), Remedy: exampleRemedy(r)})
		}
	}
	return out
}

// Lookup is the entry of id (a finding before a refusal of the same
// name), and whether there is one.
func Lookup(id ID) (Entry, bool) {
	for _, e := range Entries() {
		if e.ID == id {
			return e, true
		}
	}
	return Entry{}, false
}

var scopeCommands = map[Scope][]string{
	ScopeDataDir:  {"check", "run", "convert"},
	ScopeDatabase: {"check", "run", "convert"},
	ScopeReport:   {"check", "run", "convert"},
	ScopeCompose:  {"compose"},
	ScopeManifest: {"kube", "kube audit"},
	// Keys written twice are in files: the API server's JSON has none.
	ScopeManifestKey: {"kube"},
	ScopeConvert:     {"convert", "run --on-unsafe convert"},
}

// exampleRemedy is r's remedy for the example subject, or nil when r
// has none or needs facts the example lacks.
func exampleRemedy(r rule) (remedy []string) {
	if r.remedy == nil {
		return nil
	}
	defer func() {
		if recover() != nil { // a fact the example lacks
			remedy = nil
		}
	}()
	return r.remedy(exampleSubject(r.scope))
}

// exampleSubject is the example for a rule of scope sc.
func exampleSubject(sc Scope) subject {
	m := &mounts.Mount{Mountpoint: "/data", Root: "/", FSType: "fakeowner", Source: "/run/host_mark/Users",
		Class: mounts.ClassCrossVM, Platform: "Docker Desktop", Reason: "Docker Desktop's file sharing (fakeowner)"}
	r := &Report{DataDirs: []DataDir{{Path: "/data", Resolved: "/data", Exists: true, Inspected: true, Mount: m,
		Databases: []Database{{Database: sqlitefile.Database{Path: ExamplePath, JournalMode: sqlitefile.JournalWAL}}}}},
		Manifests: &manifest.Analysis{Workloads: []manifest.Workload{{Kind: "Deployment", Name: "app", Namespace: "default", Replicas: 1}}}}
	d := &r.DataDirs[0]
	s := subject{r: r, dir: d}
	switch sc {
	case ScopeCompose:
		s.cm = &compose.Mount{Service: "app", Type: "bind", Source: "/Users/me/app/data", Target: "/data", ReadWrite: true, DataDir: true, DataPath: "/data", HostFS: m}
	case ScopeManifest:
		s.km = &manifest.Mount{Workload: 0, Claim: -1, Volume: "data", Source: "hostPath", SQLite: true}
	case ScopeDatabase:
		s.db = &d.Databases[0]
	}
	return s
}
