package kube

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestTokenReReadWhenRotated(t *testing.T) {
	var seen []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("Authorization"))
		fmt.Fprint(w, `{}`)
	}))
	t.Cleanup(srv.Close)
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	c, err := newClient(&Config{Server: srv.URL, CAData: ca, TokenFile: tok}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	var out struct{}
	get := func() {
		if err := c.get(context.Background(), "/version", nil, &out, "get", "version", "", ""); err != nil {
			t.Fatal(err)
		}
	}
	get()
	// The kubelet replaces the file (a new ..data directory): new content,
	// new modification time.
	if err := os.WriteFile(tok+".new", []byte("second\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	os.Chtimes(tok+".new", later, later)
	if err := os.Rename(tok+".new", tok); err != nil {
		t.Fatal(err)
	}
	get()
	if len(seen) != 2 || seen[0] != "Bearer first" || seen[1] != "Bearer second" {
		t.Errorf("Authorization = %q, want Bearer first, then Bearer second after the rotation", seen)
	}
}
