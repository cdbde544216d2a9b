package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/preflight-sqlite/preflight/internal/dirfd"
)

// StateFile is the name of the state file `preflight run --on-unsafe
// convert` keeps in each data directory.
const StateFile = ".preflight-state.json"

// StateSchema names the state file's format.
const StateSchema = "preflight-state/v1"

// maxConversions bounds the history kept in a state file.
const maxConversions = 100

// State is the content of a state file: the conversions made at earlier
// starts, oldest first.
type State struct {
	Schema      string       `json:"schema"`
	Conversions []Conversion `json:"conversions"`
}

// Conversion records one conversion.
type Conversion struct {
	// Path is the database's absolute path, symlinks resolved
	// (CanonicalPath).
	Path string `json:"path"`
	From string `json:"from"`
	To   string `json:"to"`
	// At is when it was converted (UTC).
	At time.Time `json:"at"`
	// Backup is the backup directory's absolute path (CanonicalPath),
	// when one was made or reused. State files written before it was
	// absolute hold a path relative to the working directory of that
	// start; BackupPath reads them.
	Backup string `json:"backup,omitempty"`
	// Verified is what the verification could not check (such as
	// "quick_check not run: ..."); empty when everything was checked.
	Verified string `json:"verified,omitempty"`
	// Failed is why an attempt that made Backup failed; the database may
	// still be in its old mode. Such an entry is no conversion
	// (ConvertedToDelete skips it), but while Backup exists the entrypoint
	// does not try again (see Policy).
	Failed string `json:"failed,omitempty"`
	// Interrupted is why an attempt that made Backup stopped when told to
	// (a signal during the start, "context canceled"), saying whether the
	// journal mode had changed. It is no failure: the next start converts
	// again and reuses Backup while it holds the files as they are (see
	// Policy). Such an entry is no conversion either.
	Interrupted string `json:"interrupted,omitempty"`
}

// BackupPath is c.Backup as an absolute path. A relative Backup (written
// before backups were recorded absolute, relative to that start's working
// directory) is taken as the directory of that name beside the database,
// where the entrypoint puts its backups.
func (c Conversion) BackupPath() string {
	if c.Backup == "" || filepath.IsAbs(c.Backup) {
		return c.Backup
	}
	return filepath.Join(filepath.Dir(c.Path), filepath.Base(c.Backup))
}

// ParseState decodes a state file.
func ParseState(r io.Reader) (State, error) {
	var s State
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		return State{}, fmt.Errorf("parse state: %w", err)
	}
	if s.Schema != StateSchema {
		return State{}, fmt.Errorf("parse state: schema %q, want %q", s.Schema, StateSchema)
	}
	return s, nil
}

// maxStateBytes bounds the state file read, in bytes.
const maxStateBytes = 1 << 20

// ReadState reads dir's state file; a missing file is an empty State. Only
// a regular file (not a symlink, FIFO or device: a FIFO would block the
// entrypoint forever) of at most 1 MiB is read. The file is opened
// relative to a descriptor of dir (internal/dirfd), never by a path that
// dir's owner could swap.
func ReadState(dir string) (State, error) {
	d, err := dirfd.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return State{Schema: StateSchema}, nil
	}
	if err != nil {
		return State{Schema: StateSchema}, err
	}
	defer d.Close()
	return readState(d)
}

func readState(d *dirfd.Dir) (State, error) {
	path := filepath.Join(d.Path, StateFile)
	fi, err := d.Lstat(StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return State{Schema: StateSchema}, nil
	}
	if err != nil {
		return State{Schema: StateSchema}, err
	}
	if !fi.Mode().IsRegular() {
		return State{Schema: StateSchema}, fmt.Errorf("%s: not a regular file (%s): ignored", path, fi.Mode().Type())
	}
	f, fi, err := d.OpenRegular(StateFile)
	if err != nil {
		return State{Schema: StateSchema}, fmt.Errorf("%w: ignored", err)
	}
	defer f.Close()
	if fi.Size() > maxStateBytes {
		return State{Schema: StateSchema}, fmt.Errorf("%s: %d bytes, more than %d: ignored", path, fi.Size(), maxStateBytes)
	}
	return ParseState(io.LimitReader(f, maxStateBytes))
}

// ConvertedToDelete returns the databases whose latest recorded conversion
// was to DELETE.
func (s State) ConvertedToDelete() []string {
	last := map[string]string{}
	var order []string
	for _, c := range s.Conversions {
		if c.Failed != "" || c.Interrupted != "" {
			continue
		}
		if _, ok := last[c.Path]; !ok {
			order = append(order, c.Path)
		}
		last[c.Path] = c.To
	}
	var out []string
	for _, p := range order {
		if last[p] == ToDelete {
			out = append(out, p)
		}
	}
	return out
}

// Record appends cs to dir's state file, replacing it atomically (a
// temporary file fsynced and renamed over it, then the directory fsynced).
// Every step is relative to one descriptor of dir (internal/dirfd): the
// temporary file is created O_EXCL|O_NOFOLLOW and renamed with renameat.
func Record(dir string, cs ...Conversion) error {
	d, err := dirfd.Open(dir)
	if err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	defer d.Close()
	s, err := readState(d)
	if err != nil {
		s = State{Schema: StateSchema} // an unreadable state file is replaced
	}
	s.Conversions = append(s.Conversions, cs...)
	if n := len(s.Conversions); n > maxConversions {
		s.Conversions = s.Conversions[n-maxConversions:]
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp, name, err := d.CreateTemp(StateFile + ".tmp-")
	if err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	renamed := false
	defer func() {
		if !renamed {
			d.Remove(name)
		}
	}()
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write state: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	if err := d.Rename(name, StateFile); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	renamed = true
	return d.Sync()
}
