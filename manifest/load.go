//go:build !nocompose

package manifest

import (
	"fmt"
	"io"
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
func Load(inputs []string, stdin io.Reader) ([]Object, []string, error) {
	var objs []Object
	var files []string
	for _, in := range inputs {
		names, err := expand(in)
		if err != nil {
			return nil, nil, err
		}
		for _, n := range names {
			o, err := loadOne(n, stdin)
			if err != nil {
				return nil, nil, err
			}
			objs = append(objs, o...)
			files = append(files, n)
		}
	}
	return objs, files, nil
}

// expand lists the manifest files of one input.
func expand(in string) ([]string, error) {
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
	ents, err := os.ReadDir(in)
	if err != nil {
		return nil, fmt.Errorf("read manifests: %w", err)
	}
	var out []string
	for _, e := range ents {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.Type().IsRegular() && slices.Contains([]string{".yaml", ".yml", ".json"}, ext) {
			out = append(out, filepath.Join(in, e.Name()))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read manifests: %s holds no .yaml, .yml or .json file", in)
	}
	return out, nil
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
