//go:build nocompose

package manifest

import "io"

// Built is false in the nocompose build (the images' binary): Load
// returns ErrNotBuilt.
const Built = false

// Load returns ErrNotBuilt: this binary was built with the nocompose tag.
func Load(inputs []string, stdin io.Reader) ([]Object, []string, error) {
	return nil, nil, ErrNotBuilt
}

// LoadRecursive returns ErrNotBuilt: this binary was built with the
// nocompose tag.
func LoadRecursive(inputs []string, stdin io.Reader) ([]Object, []string, error) {
	return nil, nil, ErrNotBuilt
}
