package convert

import (
	"os"
	"strings"
)

// litestreamProcesses returns the pids of processes in our PID namespace
// whose command name is litestream.
func litestreamProcesses() []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		name := e.Name()
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/comm")
		if err == nil && strings.TrimSpace(string(b)) == "litestream" {
			out = append(out, name)
		}
	}
	return out
}
