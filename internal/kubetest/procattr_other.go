//go:build !linux

package kubetest

import "syscall"

// sysProcAttr has nothing to add outside Linux (no parent-death signal):
// only t.Cleanup stops the servers there.
func sysProcAttr() *syscall.SysProcAttr {
	return nil
}
