package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// installTestVersion is the version the module is published at in the
// test's own GOPROXY.
const installTestVersion = "v0.99.0"

// `go install github.com/preflight-sqlite/preflight/cmd/preflight@latest`
// works once a tag exists: the committed tree (HEAD, as a tag would hold
// it) is zipped as the module proxy serves it, put into a file:// GOPROXY
// at installTestVersion, and installed from there with @latest into an
// empty GOMODCACHE; the installed binary then reports that version. It
// fails when go.mod has a replace or exclude directive (go install refuses
// a module@version whose go.mod has them), when a tracked file cannot go
// into a module zip, or when the command does not build from the zip alone.
func TestGoInstallLatest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds preflight from a module zip: skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		skipOrFail(t, "go command not found: "+err.Error())
	}
	if _, err := exec.LookPath("git"); err != nil {
		skipOrFail(t, "git not found: "+err.Error())
	}
	root := repoRoot(t)
	modPath := checkModFile(t, filepath.Join(root, "go.mod"))
	proxy := t.TempDir()
	publish(t, proxy, root, modPath, installTestVersion)

	// Dependencies come from this machine's module cache (itself laid out as
	// a GOPROXY), then from the configured proxy; the module under test
	// comes only from the test's proxy.
	modCache := goEnv(t, goTool, "GOMODCACHE")
	upstream := goEnv(t, goTool, "GOPROXY")
	gobin := t.TempDir()
	cmd := exec.Command(goTool, "install", modPath+"/cmd/preflight@latest")
	cmd.Dir = t.TempDir() // outside any module, as a user runs it
	cmd.Env = append(os.Environ(),
		"GOBIN="+gobin,
		"GOMODCACHE="+filepath.Join(t.TempDir(), "mod"),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(filepath.Join(modCache, "cache", "download"))+","+upstream,
		"GONOSUMDB="+modPath, // the test version is in no checksum database
		"GONOPROXY=", "GOPRIVATE=", "GOWORK=off",
		"GOFLAGS=-modcacherw -trimpath", // -trimpath: reuse the build cache across module cache paths
		"CGO_ENABLED=0",
	)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install %s/cmd/preflight@latest: %v\n%s", modPath, err, out)
	}
	bin := filepath.Join(gobin, "preflight")
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", bin, err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "preflight "+installTestVersion; got != want {
		t.Errorf("installed preflight --version = %q, want %q", got, want)
	}
}

// checkModFile returns the module path of the go.mod at path and fails the
// test if it has replace or exclude directives.
func checkModFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(path, data, nil)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	for _, r := range f.Replace {
		t.Errorf("%s: replace %s: go install module@version refuses a module with replace directives", path, r.Old.Path)
	}
	for _, x := range f.Exclude {
		t.Errorf("%s: exclude %s: go install module@version refuses a module with exclude directives", path, x.Mod)
	}
	return f.Module.Mod.Path
}

// publish writes modPath at version into dir in the GOPROXY layout
// (https://go.dev/ref/mod#goproxy-protocol): @v/list, .info, .mod and .zip,
// the zip made from the committed tree at HEAD of the repository at root.
func publish(t *testing.T, dir, root, modPath, version string) {
	t.Helper()
	esc, err := module.EscapePath(modPath)
	if err != nil {
		t.Fatal(err)
	}
	at := filepath.Join(dir, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	// The committed tree, as `git archive` gives it (zip.CreateFromVCS
	// does not know a linked work tree, whose .git is a file).
	tree := t.TempDir()
	unpack := exec.Command("sh", "-c", `git -C "$1" archive HEAD | tar -x -C "$2"`, "sh", root, tree)
	if out, err := unpack.CombinedOutput(); err != nil {
		t.Fatalf("git archive HEAD: %v\n%s", err, out)
	}
	var z bytes.Buffer
	m := module.Version{Path: modPath, Version: version}
	if err := zip.CreateFromDir(&z, m, tree); err != nil {
		t.Fatalf("module zip of HEAD: %v", err)
	}
	mod, err := os.ReadFile(filepath.Join(tree, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"list":            []byte(version + "\n"),
		version + ".info": info,
		version + ".mod":  mod,
		version + ".zip":  z.Bytes(),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// repoRoot is the top of the git work tree holding this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		skipOrFail(t, "not in a git work tree: "+err.Error())
	}
	return strings.TrimSpace(string(out))
}

// goEnv returns `go env NAME`.
func goEnv(t *testing.T, goTool, name string) string {
	t.Helper()
	out, err := exec.Command(goTool, "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}
