package sqlitefile

import (
	"os"

	"github.com/preflight-sqlite/preflight/internal/rawfile"
)

// openRead opens path for a raw read that never blocks (rawfile.OpenAny):
// a FIFO or device in place of a database is an error, not a hang.
func openRead(path string) (*os.File, error) { return rawfile.OpenAny(path, false) }
