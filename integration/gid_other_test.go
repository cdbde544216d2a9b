//go:build !unix

package integration_test

import "errors"

// fileGID is not known on this system.
func fileGID(string) (string, error) { return "", errors.New("no file group ids here") }

func fileUID(string) (string, error) { return "", errors.New("file owners: not on this system") }
