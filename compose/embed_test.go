//go:build !nocompose

package compose

import (
	"bytes"
	"compress/gzip"
	"flag"
	"io"
	"os"
	"testing"
)

var updateEmbedded = flag.Bool("update", false, "rewrite catalogue.yaml.gz from catalogue.yaml")

// TestEmbeddedCatalogue: the gzipped catalogue the binary embeds is
// catalogue.yaml byte for byte (go test ./compose -run
// TestEmbeddedCatalogue -update rewrites it; gzip without a name or time,
// so the file depends on the YAML alone).
func TestEmbeddedCatalogue(t *testing.T) {
	src, err := os.ReadFile("catalogue.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if *updateEmbedded {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		if _, err := zw.Write(src); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("catalogue.yaml.gz", b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	zr, err := gzip.NewReader(bytes.NewReader(builtinCatalogueGz))
	if err != nil {
		t.Fatalf("embedded catalogue.yaml.gz: %v", err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("embedded catalogue.yaml.gz: %v", err)
	}
	if !bytes.Equal(got, src) {
		t.Fatalf("catalogue.yaml.gz is not catalogue.yaml: run go test ./compose -run TestEmbeddedCatalogue -update")
	}
}
