package wal_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/preflight-sqlite/preflight/probe/wal"
)

var update = flag.Bool("update", false, "regenerate testdata/*.wal and their .json reports with SQLite")

// fixtures are the small committed WAL files in testdata/ (page size 512).
// They pin the JSON shape of Report and seed FuzzValidate. Regenerate with
// go test -run TestFixtures -update.
var fixtures = []struct {
	name  string
	check func(wal.Report) bool // property the fixture must keep
	make  func(t *testing.T) walBytes
}{
	{
		name:  "intact",
		check: func(r wal.Report) bool { return r.FirstInvalidFrame == 0 && r.CommittedTxns == 4 },
		make:  func(t *testing.T) walBytes { return driverWAL(t, 512, inserts(4, 50, 700)...).wal },
	},
	{
		name:  "flipped",
		check: func(r wal.Report) bool { return r.Discards() && r.CommitsAfterBreak > 0 },
		make: func(t *testing.T) walBytes {
			w := driverWAL(t, 512, inserts(4, 50, 700)...).wal
			w.frame(3)[wal.FrameHeaderSize+40] ^= 0x10
			return w
		},
	},
	{
		name:  "big-endian",
		check: func(r wal.Report) bool { return r.Header.BigEndianChecksum && r.FirstInvalidFrame == 0 },
		make: func(t *testing.T) walBytes {
			return driverWAL(t, 512, inserts(3, 50, 700)...).wal.toBigEndian()
		},
	},
	{
		name:  "stale",
		check: func(r wal.Report) bool { return r.Stale && !r.Discards() && r.CommittedTxns == 1 },
		make: func(t *testing.T) walBytes {
			stmts := append(inserts(5, 50, 700), "PRAGMA wal_checkpoint(RESTART)")
			return driverWAL(t, 512, append(stmts, inserts(1, 50)...)...).wal
		},
	},
}

func TestFixtures(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			walPath := filepath.Join("testdata", fx.name+".wal")
			jsonPath := filepath.Join("testdata", fx.name+".json")
			if *update {
				w := fx.make(t)
				rep, err := wal.Validate(bytes.NewReader(w))
				if err != nil {
					t.Fatalf("Validate(new %s): %v", fx.name, err)
				}
				js, err := json.MarshalIndent(rep, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(walPath, w, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(jsonPath, append(js, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := wal.ValidateFile(walPath)
			if err != nil {
				t.Fatalf("ValidateFile(%s): %v", walPath, err)
			}
			js, err := os.ReadFile(jsonPath)
			if err != nil {
				t.Fatal(err)
			}
			var want wal.Report
			if err := json.Unmarshal(js, &want); err != nil {
				t.Fatalf("json.Unmarshal(%s): %v", jsonPath, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ValidateFile(%s) mismatch with %s (-want +got):\n%s", walPath, jsonPath, diff)
			}
			if !fx.check(got) {
				t.Errorf("ValidateFile(%s) = %+v, which lost the property this fixture exists for", walPath, got)
			}
		})
	}
}
