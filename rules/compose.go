package rules

import (
	"fmt"
	"strings"

	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/policy"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// composeRules judge the compose analysis, one service mount at a time
// (table.go).
var composeRules = []rule{
	{
		Rule: Rule{BindOnDesktop, LevelError, "compose: a data directory on a bind mount while the engine runs in a VM (Docker Desktop, OrbStack, Colima, Lima, Rancher Desktop, Podman machine): the share crosses the VM boundary"}, scope: ScopeCompose, action: ActRewriteBind,
		match: func(s subject) (string, Level, bool) {
			m, a := s.cm, s.r.Compose
			if !m.DataDir || m.Type != "bind" || a.Platform.Kind == compose.PlatformLinux {
				return "", "", false
			}
			lvl := confidenceLevel(m, LevelError)
			where := "the engine runs in a VM (" + platformName(a.Platform) + ")"
			if a.Platform.Kind == compose.PlatformUnknown {
				lvl = LevelWarn
				where = "the engine is unknown (the Docker API did not answer and no --platform was given), so this assumes either: on Docker Desktop, OrbStack, Colima, Lima, Rancher Desktop or a Podman machine"
			}
			return fmt.Sprintf("%s %s is a bind mount of host directory %s; %s, so the share crosses the VM boundary and SQLite's locks and -shm shared memory are not coherent across it: WAL databases corrupt, and even rollback mode is slow and fragile there (%s)",
				m.Key(), dataWhat(m), sourceShown(m), where, m.Why), lvl, true
		},
		remedy: composeBindRemedy,
	},
	{
		Rule: Rule{BindOnUnsafeFS, LevelError, "compose: on a native Linux engine, a data directory bind-mounted from a host directory on a cross-vm, network or FUSE filesystem"}, scope: ScopeCompose, action: ActRewriteBind,
		match: func(s subject) (string, Level, bool) {
			m := s.cm
			if !m.DataDir || m.Type != "bind" || s.r.Compose.Platform.Kind != compose.PlatformLinux || m.HostFS == nil || !policy.WALUnsafe(m.HostFS.Class) {
				return "", "", false
			}
			lvl := confidenceLevel(m, LevelError)
			if m.HostFS.Class == mounts.ClassFUSE && !m.HostFS.KnownLosses {
				lvl = LevelWarn
			}
			return fmt.Sprintf("%s %s is a bind mount of host directory %s, which is on a %s filesystem (%s): WAL needs POSIX locks and shared memory that every process sees (%s)",
				m.Key(), dataWhat(m), sourceShown(m), m.HostFS.Class, m.HostFS.Reason, m.Why), lvl, true
		},
		remedy: composeBindRemedy,
	},
	{
		Rule: Rule{BindSourceUnchecked, LevelWarn, "compose: on a native Linux engine, the host filesystem of a data directory's bind source could not be read or classified (it did not answer in time, or the mount table could not be read), so it may be a network or FUSE filesystem"}, scope: ScopeCompose,
		match: func(s subject) (string, Level, bool) {
			m := s.cm
			if !m.DataDir || m.Type != "bind" || s.r.Compose.Platform.Kind != compose.PlatformLinux || m.HostFS != nil || m.HostFSError == "" {
				return "", "", false
			}
			return fmt.Sprintf("%s %s is a bind mount of host directory %s, whose filesystem was not checked: %s (%s)",
				m.Key(), dataWhat(m), sourceShown(m), m.HostFSError, m.Why), confidenceLevel(m, LevelWarn), true
		},
		remedy: func(s subject) []string {
			return appendDocs(s.cm, []string{
				fmt.Sprintf("Find out what %s is on (findmnt -T %s); a directory that does not answer is often a network share whose server is down or a stuck FUSE daemon, where SQLite is not safe either", s.cm.Source, s.cm.Source),
				"Or move the data to a named volume: preflight compose --diff shows the rewrite.",
			})
		},
	},
	{
		Rule: Rule{VolumeOnNetwork, LevelError, "compose: a data directory on a named volume whose driver_opts make it NFS or CIFS, or whose driver is not local"}, scope: ScopeCompose,
		match: func(s subject) (string, Level, bool) {
			m := s.cm
			if !m.DataDir || m.Volume == nil || m.Volume.NetworkFS == "" {
				return "", "", false
			}
			return fmt.Sprintf("%s %s is on volume %s, which is %s: SQLite's locks and shared memory are not reliable on network filesystems, and a second client corrupts a WAL database (%s)",
				m.Key(), dataWhat(m), m.Volume.Key, networkWhat(m.Volume), m.Why), confidenceLevel(m, LevelError), true
		},
		remedy: func(s subject) []string {
			m := s.cm
			return appendDocs(m, []string{
				fmt.Sprintf("Keep the database on a local named volume (remove driver/driver_opts from volume %s, or add a new local volume for %s) and copy it there once with preflight migrate; back it up to the network share instead (litestream, sqlite3 .backup).", m.Volume.Key, m.Target),
				"If it must stay on the share: one writer only, and journal_mode=DELETE (preflight run exports PREFLIGHT_JOURNAL_MODE=delete).",
			})
		},
	},
	{
		Rule: Rule{VolumeIsBind, LevelWarn, "compose: a data directory on a named volume with driver_opts o: bind and device: a host path, which is a bind mount in disguise, judged as one (error on a VM engine or an unsafe host filesystem)"}, scope: ScopeCompose,
		match: func(s subject) (string, Level, bool) {
			m, a := s.cm, s.r.Compose
			if !m.DataDir || m.Volume == nil || m.Volume.BindDevice == "" {
				return "", "", false
			}
			head := fmt.Sprintf("%s %s is on volume %s, which binds host directory %s (driver_opts o: bind)", m.Key(), dataWhat(m), m.Volume.Key, m.Volume.BindDevice)
			switch {
			case a.Platform.Kind == compose.PlatformDesktop:
				return fmt.Sprintf("%s; the engine runs in a VM (%s), so this is a bind across the VM boundary where SQLite's locks and shared memory fail (%s)", head, platformName(a.Platform), m.Why), confidenceLevel(m, LevelError), true
			case a.Platform.Kind == compose.PlatformUnknown:
				return fmt.Sprintf("%s; the engine is unknown, and on Docker Desktop, OrbStack, Colima, Lima, Rancher Desktop or a Podman machine this bind crosses the VM boundary (%s)", head, m.Why), LevelWarn, true
			case m.HostFS != nil && policy.WALUnsafe(m.HostFS.Class):
				return fmt.Sprintf("%s on a %s filesystem (%s) (%s)", head, m.HostFS.Class, m.HostFS.Reason, m.Why), confidenceLevel(m, LevelError), true
			}
			return fmt.Sprintf("%s; on this native Linux engine the host directory is on a local filesystem, which is safe, but the data lives outside Docker's volume storage (%s)", head, m.Why), LevelInfo, true
		},
		remedy: func(s subject) []string {
			m := s.cm
			return appendDocs(m, []string{
				fmt.Sprintf("Make %s a plain local volume (remove its driver_opts) and copy the data from %s into it once: preflight migrate --from /from --to /to in a one-shot container with the old directory at /from and the volume at /to.", m.Volume.Key, m.Volume.BindDevice),
			})
		},
	},
	{
		Rule: Rule{SharedWriter, LevelWarn, "compose: the same volume or bind source holding a data directory is mounted read-write by more than one service (or, with --live, by other running containers)"}, scope: ScopeCompose,
		match: func(s subject) (string, Level, bool) {
			m := s.cm
			if !m.DataDir || len(m.SharedWith) == 0 && len(m.LiveWriters) == 0 {
				return "", "", false
			}
			var who []string
			if len(m.SharedWith) > 0 {
				who = append(who, "services "+strings.Join(m.SharedWith, ", "))
			}
			if len(m.LiveWriters) > 0 {
				who = append(who, "running containers "+strings.Join(m.LiveWriters, "; "))
			}
			lvl := LevelWarn
			what := "two writers of one SQLite database meet \"database is locked\" and, on a share or network volume, corruption"
			if m.Volume != nil && m.Volume.NetworkFS != "" {
				lvl = LevelError
				what = "on a network volume several writers corrupt a WAL database"
			}
			return fmt.Sprintf("%s %s (%s) is also mounted read-write by %s: %s", m.Key(), dataWhat(m), sourceShown(m), strings.Join(who, " and "), what), lvl, true
		},
		remedy: func(s subject) []string {
			return appendDocs(s.cm, []string{
				"Give the database one writing service; mount it :ro in the others (a backup or replication sidecar such as litestream that is meant to share it can stay: --ignore shared-writer).",
			})
		},
	},
	{
		Rule: Rule{NoVolume, LevelWarn, "compose: a data directory on no mount (the container's writable layer) or on tmpfs: the data is lost when the container is removed or stops"}, scope: ScopeCompose,
		match: func(s subject) (string, Level, bool) {
			m := s.cm
			switch {
			case !m.DataDir:
			case m.Type == compose.TypeNone:
				return fmt.Sprintf("%s %s is on no volume: it is in the container's writable layer and is lost on docker compose down, a recreate or an image upgrade (%s)", m.Key(), dataWhat(m), m.Why), "", true
			case m.Type == "tmpfs":
				return fmt.Sprintf("%s %s is on tmpfs: it is lost whenever the container stops (%s)", m.Key(), dataWhat(m), m.Why), "", true
			}
			return "", "", false
		},
		remedy: func(s subject) []string {
			m := s.cm
			name := m.Service + "-data"
			return appendDocs(m, []string{
				fmt.Sprintf("Mount a named volume there: under services.%s.volumes add \"- %s:%s\", and a top-level volumes: {%s: {}}.", m.Service, name, m.Target, name),
			})
		},
	},
	{
		Rule: Rule{BindNotJudged, LevelWarn, "compose: a read-write bind mount whose content is unknown (its source does not exist on this machine, did not answer, or was not read) of services whose images are not in the catalogue, so no rule could judge it: it may hold SQLite data"}, scope: ScopeCompose,
		match: func(s subject) (string, Level, bool) {
			m := s.cm
			for _, n := range s.r.Compose.NotJudged {
				if n.Mount == m.Key() {
					return fmt.Sprintf("%s is a read-write bind mount of %s whose content is unknown (%s), and no service mounting it runs an image in the catalogue: it was not judged, and if it holds SQLite data the verdict does not cover it",
						m.Key(), sourceShown(m), n.Why), "", true
				}
			}
			return "", "", false
		},
		remedy: func(s subject) []string {
			m := s.cm
			return []string{
				fmt.Sprintf("If %s holds SQLite data, declare it (label %s: %s, or --data-dir %s) and it is judged; if it does not, --ignore bind-not-judged.", m.Key(), compose.LabelDataDir, m.Target, m.Key()),
				"Or run preflight compose where the project's data is, so the source can be read.",
			}
		},
	},
}

// confidenceLevel caps a possible data directory (a well-known target
// only) at warn.
func confidenceLevel(m *compose.Mount, l Level) Level {
	if m.Confidence == compose.Possible && l == LevelError {
		return LevelWarn
	}
	return l
}

func dataWhat(m *compose.Mount) string {
	switch m.Confidence {
	case compose.Possible:
		return "(possibly a data directory)"
	case compose.Catalogued:
		return "(" + m.App.Name + "'s data directory)"
	case compose.Found:
		return "(holds SQLite databases)"
	}
	return "(a data directory)"
}

func sourceShown(m *compose.Mount) string {
	switch {
	case m.Type == "volume":
		return "volume " + m.Source
	case m.RawSource != "" && m.Default != "":
		return fmt.Sprintf("%s, written %s (default %s)", m.Source, m.RawSource, m.Default)
	case m.RawSource != "":
		return fmt.Sprintf("%s, written %s", m.Source, m.RawSource)
	}
	return m.Source
}

func platformName(p compose.Platform) string {
	switch {
	case p.How == "flag":
		return "--platform " + p.Kind
	case p.Engine != "":
		return p.Engine
	}
	return p.Kind
}

func networkWhat(v *compose.Volume) string {
	if v.Driver != "" && v.Driver != "local" {
		return "driven by " + v.Driver + " (not local: it may live on another machine)"
	}
	name := fsName(v.NetworkFS)
	return article(name) + " " + name + " mount (driver_opts)"
}

// fsName is a network filesystem type as people write it: NFS, NFS4,
// CIFS, SMB, SMB3 in capitals, any other as given.
func fsName(t string) string {
	switch strings.ToLower(t) {
	case "nfs", "nfs4", "cifs", "smb", "smb3", "smbfs":
		return strings.ToUpper(t)
	}
	return t
}

// article is "a" or "an" before word as spoken: an acronym by the sound of
// its first letter (an NFS, a CIFS), another word by its first letter
// (an ext4, a fuse).
func article(word string) string {
	if word == "" {
		return "a"
	}
	acronym := len(word) > 1 && strings.ToUpper(word) == word && strings.ToLower(word) != word
	if acronym && strings.ContainsRune("AEFHILMNORSX", rune(word[0])) {
		return "an"
	}
	if !acronym && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an"
	}
	return "a"
}

func appendDocs(m *compose.Mount, out []string) []string {
	if m.App != nil {
		s := fmt.Sprintf("%s documents its data and database settings at %s", m.App.Name, m.App.Docs)
		if m.App.Note != "" {
			s += " (" + m.App.Note + ")"
		}
		out = append(out, s+".")
	}
	return out
}

func composeBindRemedy(s subject) []string {
	m := s.cm
	name, planned := m.Service+"-data", false
	for _, rw := range s.r.Compose.Rewrites {
		if rw.Service == m.Service && rw.Target == m.Target {
			name, planned = rw.Volume, true
		}
	}
	how := "preflight compose --diff shows the edit, --write makes it"
	if !planned {
		how = fmt.Sprintf("preflight compose writes it once the mount is declared a data directory: label io.preflight.data-dir: %s, or --data-dir %s", m.Target, m.Key())
	}
	out := []string{
		fmt.Sprintf("Use a named volume, which lives on the engine's own disk: replace the source of %s with %s and declare it under the top-level volumes: (%s), then copy the data once with preflight migrate (the commands are printed with the rewrite).", m.Key(), name, how),
		"Or keep the bind and use journal_mode=DELETE with a single writer (preflight run exports PREFLIGHT_JOURNAL_MODE=delete).",
	}
	return appendDocs(m, out)
}
