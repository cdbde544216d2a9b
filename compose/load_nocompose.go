//go:build nocompose

package compose

import "context"

// Built is false in the nocompose build: Load returns ErrNotBuilt.
const Built = false

// Load returns ErrNotBuilt: this binary was built with the nocompose tag.
func Load(ctx context.Context, opts LoadOptions) (*Loaded, error) {
	return nil, ErrNotBuilt
}
