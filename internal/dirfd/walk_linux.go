package dirfd

import "golang.org/x/sys/unix"

// walkFlag opens the directories on the way to the one Open returns:
// O_PATH needs only search permission on them.
const walkFlag = unix.O_PATH
