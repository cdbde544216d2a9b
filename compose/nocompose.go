//go:build nocompose

package compose

import "context"

// The nocompose build (the image's binary) keeps the model (model.go) and
// the file writer, and leaves out everything that needs compose-go, a YAML
// library or the diff library: each function here returns ErrNotBuilt or
// nothing, and Load never returns a project for them to work on.

// Built is false in the nocompose build: Load returns ErrNotBuilt.
const Built = false

// Project stands in for compose-go's types.Project, which this build does
// not link: Load never returns one.
type Project struct {
	// Name is the project name.
	Name string
}

// locator stands in for the declaration finder (locate.go).
type locator struct{}

// Load returns ErrNotBuilt: this binary was built with the nocompose tag.
func Load(ctx context.Context, opts LoadOptions) (*Loaded, error) {
	return nil, ErrNotBuilt
}

// Analyze returns ErrNotBuilt.
func Analyze(_ context.Context, l *Loaded, opts Options) (*Analysis, error) {
	return nil, ErrNotBuilt
}

// Plan returns ErrNotBuilt and proposes nothing.
func (a *Analysis) Plan(which []int, findings map[int][]string, opts PlanOptions) ([]FileEdit, error) {
	return nil, ErrNotBuilt
}

// Verify returns ErrNotBuilt.
func (a *Analysis) Verify(p *Project) error {
	return ErrNotBuilt
}

// UnifiedDiff returns ErrNotBuilt.
func UnifiedDiff(edits []FileEdit, dir string) (string, error) {
	return "", ErrNotBuilt
}

// Builtin returns an empty catalogue: this build embeds none.
func Builtin() *Catalogue {
	return &Catalogue{}
}

// ParseCatalogue returns ErrNotBuilt.
func ParseCatalogue(b []byte) (*Catalogue, error) {
	return nil, ErrNotBuilt
}

// ReadCatalogue returns ErrNotBuilt.
func ReadCatalogue(name string) (*Catalogue, error) {
	return nil, ErrNotBuilt
}
