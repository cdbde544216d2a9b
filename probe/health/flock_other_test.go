//go:build !unix

package health_test

import (
	"errors"
	"os"
	"runtime"
)

// flockEx fails: flock(2) is a Unix call.
func flockEx(*os.File) error { return errors.New("flock: not supported on " + runtime.GOOS) }
