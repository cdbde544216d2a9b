//go:build !linux

package health

// reservedLock is not implemented outside Linux: the lock state is unknown.
func reservedLock(string) LockState { return LockUnknown }
