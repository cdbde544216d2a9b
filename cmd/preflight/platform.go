package main

import (
	"errors"
	"fmt"
	"runtime"
)

// errNeedsLinux marks a command that cannot run on this system.
var errNeedsLinux = errors.New("needs Linux")

// linuxOnly returns nil on Linux, and elsewhere an exit-1 error ("could
// not run") for a command that reads this machine's /proc, POSIX locks or
// mount table, or execs an application in a container: run, convert,
// migrate, recover, and check and mounts without --mountinfo. withMountinfo is
// whether --mountinfo FILE was given (then check and mounts classify a
// saved table and read nothing of this machine). docs/platforms.md lists
// what runs where.
func linuxOnly(goos, command string, withMountinfo bool) error {
	if goos == "linux" {
		return nil
	}
	hints := []string{fmt.Sprintf("on %s, compose, kube, writers (over DOCKER_HOST) and check, mounts or bundle with --mountinfo FILE run; the rest runs inside the Linux container or VM", goos)}
	switch command {
	case "check", "mounts", "bundle":
		if withMountinfo {
			return nil
		}
		hints = append([]string{"save the table on the Linux side (cat /proc/self/mountinfo > mounts.txt) and pass --mountinfo mounts.txt"}, hints...)
	case "run", "convert", "migrate", "locks", "recover":
	default:
		return nil
	}
	return &exitError{code: exitInternal, err: fmt.Errorf("%s %w (/proc, POSIX locks, the mount table); this is %s", command, errNeedsLinux, goos), hints: hints}
}

// needsLinux is linuxOnly for this system.
func needsLinux(command string, withMountinfo bool) error {
	return linuxOnly(runtime.GOOS, command, withMountinfo)
}
