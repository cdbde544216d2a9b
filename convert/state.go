package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
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
	// Path is the database path as the entrypoint saw it.
	Path string `json:"path"`
	From string `json:"from"`
	To   string `json:"to"`
	// At is when it was converted (UTC).
	At time.Time `json:"at"`
	// Backup is the backup directory, when one was made.
	Backup string `json:"backup,omitempty"`
	// Verified is what the verification could not check (such as
	// "quick_check not run: ..."); empty when everything was checked.
	Verified string `json:"verified,omitempty"`
	// Failed is why an attempt that made Backup failed; the database may
	// still be in its old mode. Such an entry is no conversion
	// (ConvertedToDelete skips it), but while Backup exists the entrypoint
	// does not try again (see Policy).
	Failed string `json:"failed,omitempty"`
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
// entrypoint forever) of at most 1 MiB is read.
func ReadState(dir string) (State, error) {
	path := filepath.Join(dir, StateFile)
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return State{Schema: StateSchema}, nil
	}
	if err != nil {
		return State{Schema: StateSchema}, err
	}
	if !fi.Mode().IsRegular() {
		return State{Schema: StateSchema}, fmt.Errorf("%s: not a regular file (%s): ignored", path, fi.Mode().Type())
	}
	if fi.Size() > maxStateBytes {
		return State{Schema: StateSchema}, fmt.Errorf("%s: %d bytes, more than %d: ignored", path, fi.Size(), maxStateBytes)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return State{Schema: StateSchema}, err
	}
	defer f.Close()
	return ParseState(io.LimitReader(f, maxStateBytes))
}

// ConvertedToDelete returns the databases whose latest recorded conversion
// was to DELETE.
func (s State) ConvertedToDelete() []string {
	last := map[string]string{}
	var order []string
	for _, c := range s.Conversions {
		if c.Failed != "" {
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
func Record(dir string, cs ...Conversion) error {
	s, err := ReadState(dir)
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
	tmp, err := os.CreateTemp(dir, StateFile+".tmp-*")
	if err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	defer os.Remove(tmp.Name())
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
	if err := os.Rename(tmp.Name(), filepath.Join(dir, StateFile)); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	return syncDir(dir)
}
