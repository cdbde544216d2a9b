package kubetest

import "syscall"

// sysProcAttr makes the kernel kill a server when the test binary that
// started it dies, so a crashed test leaves no server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
