//go:build !unix

package salvage_test

import "os"

// maxRSSKiB is not known on this system.
func maxRSSKiB(*os.ProcessState) (int64, bool) { return 0, false }
