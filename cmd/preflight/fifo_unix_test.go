//go:build unix

package main

import "syscall"

// mkfifo makes a named pipe (mkfifo(3)).
var mkfifo = syscall.Mkfifo
