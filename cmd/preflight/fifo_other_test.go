//go:build !unix

package main

import (
	"errors"
	"runtime"
)

// mkfifo fails: named pipes at a path are a Unix idea.
func mkfifo(string, uint32) error {
	return errors.New("mkfifo: not supported on " + runtime.GOOS)
}
