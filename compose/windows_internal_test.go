package compose

import "testing"

// TestWindowsPath: which bind sources are taken for Windows host paths.
func TestWindowsPath(t *testing.T) {
	for p, want := range map[string]bool{
		`C:\Users\me\data`: true, "d:/db": true, `Z:\`: true, `\\server\share\db`: true,
		"/data": false, "./data": false, "data": false, "//srv/data": false, `\\\x`: false,
		"C:": false, "c:data": false, "1:/x": false, "${DATA}": false, "~/data": false, "": false,
	} {
		if got := windowsPath(p); got != want {
			t.Errorf("windowsPath(%q) = %v, want %v", p, got, want)
		}
	}
	for raw, want := range map[string]int{`C:\data:/data`: 7, "d:/db:/db:rw": 5, "./d:/data": 3, "${D:-C:\\x}:/data": 10, "vol": 0} {
		if got := shortSourceEnd(raw); got != want {
			t.Errorf("shortSourceEnd(%q) = %d, want %d", raw, got, want)
		}
	}
}
