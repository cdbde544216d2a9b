//go:build !nocompose

package compose

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"go.yaml.in/yaml/v4"
)

// builtinCatalogueGz is catalogue.yaml, gzipped (catalogue.yaml.gz, made
// by go test ./compose -run TestEmbeddedCatalogue -update and kept fresh by
// that test): 25 KB of YAML with its comments and sources is 7 KB, which
// keeps the full linux/amd64 binary within its 16 MiB budget (gzip is in
// the binary already, for preflight bundle).
//
//go:embed catalogue.yaml.gz
var builtinCatalogueGz []byte

// Builtin returns the catalogue embedded in the binary.
func Builtin() *Catalogue {
	zr, err := gzip.NewReader(bytes.NewReader(builtinCatalogueGz))
	if err != nil {
		panic("compose: embedded catalogue: " + err.Error())
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		panic("compose: embedded catalogue: " + err.Error())
	}
	c, err := ParseCatalogue(b)
	if err != nil {
		panic("compose: embedded catalogue: " + err.Error())
	}
	return c
}

// ParseCatalogue parses a catalogue file (format: catalogue.yaml). Every
// entry needs a name and at least one image; data directories must be
// absolute container paths.
func ParseCatalogue(b []byte) (*Catalogue, error) {
	var c Catalogue
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("parse catalogue: %w", err)
	}
	for i, a := range c.Apps {
		if a.Name == "" || len(a.Images) == 0 {
			return nil, fmt.Errorf("parse catalogue: entry %d: name and images are required", i+1)
		}
		for _, d := range a.DataDirs {
			if !path.IsAbs(d) {
				return nil, fmt.Errorf("parse catalogue: %s: data dir %q is not an absolute container path", a.Name, d)
			}
		}
		for _, m := range a.MovedBy {
			if m.Env == "" || (m.Kind != "dir" && m.Kind != "file") {
				return nil, fmt.Errorf("parse catalogue: %s: moved_by needs env and kind dir or file", a.Name)
			}
		}
		for _, s := range a.OtherEngine {
			if s.Env == "" {
				return nil, fmt.Errorf("parse catalogue: %s: other_engine needs env", a.Name)
			}
		}
	}
	return &c, nil
}

// ReadCatalogue reads and parses a catalogue file.
func ReadCatalogue(name string) (*Catalogue, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("read catalogue: %w", err)
	}
	if len(b) == 0 {
		return nil, errors.New("read catalogue: " + name + " is empty")
	}
	return ParseCatalogue(b)
}
