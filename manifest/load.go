//go:build !nocompose

package manifest

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Built is true in the full build: Load reads manifests.
const Built = true

// Load reads the objects of every input in order: "-" is stdin, a
// directory gives its *.yaml, *.yml and *.json files in name order (not
// its subdirectories, as kubectl apply -f DIR), anything else is a file.
// It returns the objects and the files read ("-" for stdin).
//
// Input that holds no object is bad input: standard input that holds none
// (the command that renders the manifests printed nothing, or failed) or
// inputs that hold none between them return an error wrapping ErrEmpty; a
// directory without manifest files returns a *NoManifestsError.
func Load(inputs []string, stdin io.Reader) ([]Object, []string, error) {
	return load(inputs, false, stdin)
}

// LoadRecursive is Load that also reads the manifest files of every
// subdirectory of a directory input, as kubectl apply -R -f DIR, in
// lexical order of their paths.
func LoadRecursive(inputs []string, stdin io.Reader) ([]Object, []string, error) {
	return load(inputs, true, stdin)
}

func load(inputs []string, recursive bool, stdin io.Reader) ([]Object, []string, error) {
	var objs []Object
	var files []string
	for _, in := range inputs {
		names, err := expand(in, recursive)
		if err != nil {
			return nil, nil, err
		}
		for _, n := range names {
			o, err := loadOne(n, stdin)
			if err != nil {
				return nil, nil, err
			}
			if len(o) == 0 && n == "-" {
				return nil, nil, fmt.Errorf("read manifests: standard input: %w", ErrEmpty)
			}
			objs = append(objs, o...)
			files = append(files, n)
		}
	}
	if len(objs) == 0 && len(files) > 0 {
		return nil, nil, fmt.Errorf("read manifests: %s: %w", strings.Join(files, ", "), ErrEmpty)
	}
	return objs, files, nil
}

// isManifest reports whether a directory entry is a manifest file.
func isManifest(e fs.DirEntry) bool {
	return e.Type().IsRegular() && slices.Contains([]string{".yaml", ".yml", ".json"}, strings.ToLower(filepath.Ext(e.Name())))
}

// expand lists the manifest files of one input.
func expand(in string, recursive bool) ([]string, error) {
	if in == "-" {
		return []string{"-"}, nil
	}
	fi, err := os.Stat(in)
	if err != nil {
		return nil, fmt.Errorf("read manifests: %w", err)
	}
	if !fi.IsDir() {
		return []string{in}, nil
	}
	var out []string
	if recursive {
		err = filepath.WalkDir(in, func(p string, e fs.DirEntry, err error) error {
			if err == nil && isManifest(e) {
				out = append(out, p)
			}
			return err
		})
	} else {
		var ents []fs.DirEntry
		ents, err = os.ReadDir(in)
		for _, e := range ents {
			if isManifest(e) {
				out = append(out, filepath.Join(in, e.Name()))
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read manifests: %w", err)
	}
	if len(out) == 0 {
		return nil, &NoManifestsError{Dir: in, Subdirs: manifestSubdirs(in)}
	}
	return out, nil
}

// manifestSubdirs names the subdirectories of dir that hold a manifest
// file at any depth; errors while walking only shorten the list.
func manifestSubdirs(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !isManifest(e) {
			return nil
		}
		rel, err := filepath.Rel(dir, filepath.Dir(p))
		if err == nil && rel != "." && !slices.Contains(out, rel) {
			out = append(out, rel)
		}
		return nil
	})
	return out
}

func loadOne(name string, stdin io.Reader) ([]Object, error) {
	if name == "-" {
		return Parse(stdin, "-")
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read manifests: %w", err)
	}
	defer f.Close()
	return Parse(f, name)
}
