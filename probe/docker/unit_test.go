package docker_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

func TestDiscover(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "config.json"), `{"auths":{},"currentContext":"colima"}`)
	// echo -n colima | sha256sum: the docker CLI context store directory.
	meta := filepath.Join(dir, "contexts", "meta", "f24fd3749c1368328e2b149bec149cb6795619f244c5b584e844961215dadd16", "meta.json")
	if got := docker.ContextMetaPath(dir, "colima"); got != meta {
		t.Fatalf("ContextMetaPath(colima) = %s, want %s", got, meta)
	}
	write(meta, `{"Name":"colima","Metadata":{"Description":"colima"},"Endpoints":{"docker":{"Host":"unix:///Users/me/.colima/default/docker.sock","SkipTLSVerify":false}}}`)
	write(docker.ContextMetaPath(dir, "desktop-linux"), `{"Name":"desktop-linux","Metadata":{},"Endpoints":{"docker":{"Host":"unix:///home/me/.docker/desktop/docker.sock","SkipTLSVerify":false}}}`)
	write(docker.ContextMetaPath(dir, "broken"), `{"Name":"broken","Endpoints":{}}`)

	tests := []struct {
		name    string
		env     map[string]string
		opts    docker.Options
		want    docker.Endpoint
		wantErr string
	}{
		{"config currentContext", nil, docker.Options{},
			docker.Endpoint{Host: "unix:///Users/me/.colima/default/docker.sock", Source: "context colima"}, ""},
		{"DOCKER_HOST wins", map[string]string{"DOCKER_HOST": "unix:///run/user/1000/docker.sock", "DOCKER_CONTEXT": "desktop-linux"}, docker.Options{},
			docker.Endpoint{Host: "unix:///run/user/1000/docker.sock", Source: "DOCKER_HOST"}, ""},
		{"DOCKER_CONTEXT over config", map[string]string{"DOCKER_CONTEXT": "desktop-linux"}, docker.Options{},
			docker.Endpoint{Host: "unix:///home/me/.docker/desktop/docker.sock", Source: "context desktop-linux"}, ""},
		{"context default", map[string]string{"DOCKER_CONTEXT": "default"}, docker.Options{},
			docker.Endpoint{Host: docker.DefaultHost, Source: "default"}, ""},
		{"option wins", map[string]string{"DOCKER_HOST": "tcp://h:2375"}, docker.Options{Host: "unix:///x.sock"},
			docker.Endpoint{Host: "unix:///x.sock", Source: "option"}, ""},
		{"missing context", map[string]string{"DOCKER_CONTEXT": "nope"}, docker.Options{}, docker.Endpoint{}, `find docker context "nope"`},
		{"no docker endpoint", map[string]string{"DOCKER_CONTEXT": "broken"}, docker.Options{}, docker.Endpoint{}, "no docker endpoint host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.ConfigDir = dir
			opts.Env = func(k string) string { return tt.env[k] }
			got, err := docker.Discover(opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Discover() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Discover() = %+v, %v, want %+v", got, err, tt.want)
			}
		})
	}

	// DOCKER_CONFIG and HOME locate the config directory; none means default.
	env := map[string]string{"DOCKER_CONFIG": dir}
	if got, err := docker.Discover(docker.Options{Env: func(k string) string { return env[k] }}); err != nil || got.Source != "context colima" {
		t.Errorf("Discover(DOCKER_CONFIG=dir) = %+v, %v", got, err)
	}
	empty := t.TempDir()
	env = map[string]string{"HOME": empty}
	if got, err := docker.Discover(docker.Options{Env: func(k string) string { return env[k] }}); err != nil || got != (docker.Endpoint{Host: docker.DefaultHost, Source: "default"}) {
		t.Errorf("Discover(empty HOME) = %+v, %v", got, err)
	}
}

func TestContextMetaPath(t *testing.T) {
	// echo -n default | sha256sum
	got := docker.ContextMetaPath("/c", "default")
	want := "/c/contexts/meta/37a8eec1ce19687d132fe29051dca629d164e2c4958ba141d5f4133a33f0688f/meta.json"
	if got != want {
		t.Errorf("ContextMetaPath(/c, default) = %s, want %s", got, want)
	}
}

func TestRecognize(t *testing.T) {
	podman := client.ServerVersionResult{Version: "5.2.2", APIVersion: "1.41", Os: "linux",
		Components: []system.ComponentVersion{{Name: "Podman Engine", Version: "5.2.2"}, {Name: "Conmon"}, {Name: "OCI Runtime (crun)"}}}
	tests := []struct {
		name     string
		info     system.Info
		version  client.ServerVersionResult
		kind     string
		rootless bool
		vm       bool
	}{
		{"native debian 20.10 (this machine)",
			system.Info{OSType: "linux", OperatingSystem: "Debian GNU/Linux 12 (bookworm)", Name: "vm", KernelVersion: "6.1.0-28-amd64",
				SecurityOptions: []string{"name=seccomp,profile=default"}},
			client.ServerVersionResult{Version: "20.10.24+dfsg1", APIVersion: "1.41"}, "docker", false, false},
		{"docker-ce rootless",
			system.Info{OSType: "linux", OperatingSystem: "Ubuntu 24.04.1 LTS", Name: "build01",
				SecurityOptions: []string{"name=seccomp,profile=builtin", "name=rootless", "name=cgroupns"}},
			client.ServerVersionResult{Version: "27.3.1", APIVersion: "1.47", Platform: client.PlatformInfo{Name: "Docker Engine - Community"}}, "docker", true, false},
		{"docker desktop mac",
			system.Info{OSType: "linux", OperatingSystem: "Docker Desktop", Name: "docker-desktop", KernelVersion: "6.10.14-linuxkit"},
			client.ServerVersionResult{Version: "27.4.0", APIVersion: "1.47", Platform: client.PlatformInfo{Name: "Docker Desktop 4.37.1 (178610)"}}, "docker-desktop", false, true},
		{"docker desktop wsl2 by name only",
			system.Info{OSType: "linux", OperatingSystem: "Ubuntu", Name: "docker-desktop", KernelVersion: "5.15.167.4-microsoft-standard-WSL2"},
			client.ServerVersionResult{Version: "27.4.0"}, "docker-desktop", false, true},
		{"orbstack",
			system.Info{OSType: "linux", OperatingSystem: "OrbStack", Name: "orbstack", KernelVersion: "6.12.15-orbstack-00304-gd0ddcf70447d"},
			client.ServerVersionResult{Version: "27.5.1", APIVersion: "1.47", Platform: client.PlatformInfo{Name: "Docker Engine - Community"}}, "orbstack", false, true},
		{"orbstack early (alpine, kernel tells)",
			system.Info{OSType: "linux", OperatingSystem: "Alpine Linux edge (containerized)", Name: "docker", KernelVersion: "6.1.10-orbstack-00001"},
			client.ServerVersionResult{Version: "20.10.23"}, "orbstack", false, true},
		{"colima default",
			system.Info{OSType: "linux", OperatingSystem: "Ubuntu 24.04.1 LTS", Name: "colima", KernelVersion: "6.8.0-50-generic"},
			client.ServerVersionResult{Version: "27.4.0", Platform: client.PlatformInfo{Name: "Docker Engine - Community"}}, "colima", false, true},
		{"colima profile",
			system.Info{OSType: "linux", OperatingSystem: "Ubuntu 24.04.1 LTS", Name: "colima-work"},
			client.ServerVersionResult{Version: "27.4.0"}, "colima", false, true},
		{"lima docker template",
			system.Info{OSType: "linux", OperatingSystem: "Ubuntu 24.04.1 LTS", Name: "lima-docker", SecurityOptions: []string{"name=seccomp,profile=builtin", "name=rootless", "name=cgroupns"}},
			client.ServerVersionResult{Version: "27.4.0"}, "lima", true, true},
		{"rancher desktop mac (lima VM)",
			system.Info{OSType: "linux", OperatingSystem: "Alpine Linux v3.20", Name: "lima-rancher-desktop"},
			client.ServerVersionResult{Version: "27.3.1"}, "rancher-desktop", false, true},
		{"rancher desktop windows",
			system.Info{OSType: "linux", OperatingSystem: "Rancher Desktop WSL Distribution", Name: "DESKTOP-1234"},
			client.ServerVersionResult{Version: "27.3.1"}, "rancher-desktop", false, true},
		{"podman machine",
			system.Info{OSType: "linux", OperatingSystem: "fedora", Name: "localhost.localdomain", KernelVersion: "6.9.12-200.fc40.aarch64"},
			podman, "podman", false, false},
		{"podman rootless linux",
			system.Info{OSType: "linux", OperatingSystem: "fedora", Name: "laptop", SecurityOptions: []string{"name=seccomp,profile=default", "name=rootless"}},
			podman, "podman", true, false},
		{"nothing", system.Info{}, client.ServerVersionResult{}, "unknown", false, false},
	}
	for _, tt := range tests {
		got := docker.Recognize(tt.info, tt.version)
		if got.Kind != tt.kind || got.Rootless != tt.rootless || got.CrossesVM != tt.vm {
			t.Errorf("Recognize(%s) = kind %q rootless %v vm %v, want %q %v %v", tt.name, got.Kind, got.Rootless, got.CrossesVM, tt.kind, tt.rootless, tt.vm)
		}
	}
}

func TestContainerIDFromMounts(t *testing.T) {
	const id = "583888ad53a06bf655340f704be886412c2254fe6095a62176c7d6e3ee304955"
	const layer = "9d9f4f0c0e1b2a3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4"
	tests := []struct {
		name, table, want string
	}{
		{"docker engine on linux", `` +
			"573 495 0:52 / / rw,relatime master:296 - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/X:/var/lib/docker/overlay2/l/Y,upperdir=/var/lib/docker/overlay2/" + layer + "/diff\n" +
			"590 573 254:1 /var/lib/docker/containers/" + id + "/resolv.conf /etc/resolv.conf rw,relatime - ext4 /dev/vda1 rw\n" +
			"591 573 254:1 /var/lib/docker/containers/" + id + "/hostname /etc/hostname rw,relatime - ext4 /dev/vda1 rw\n" +
			"592 573 254:1 /var/lib/docker/containers/" + id + "/hosts /etc/hosts rw,relatime - ext4 /dev/vda1 rw\n", id},
		{"docker desktop", "" +
			"1405 1386 254:1 /docker/containers/" + id + "/hostname /etc/hostname rw,relatime - ext4 /dev/vda1 rw,discard\n", id},
		{"hosts only (prefers hostname when present)", "" +
			"10 1 254:1 /containers/" + layer + "/hosts /etc/hosts rw - ext4 /dev/vda1 rw\n" +
			"11 1 254:1 /containers/" + id + "/hostname /etc/hostname rw - ext4 /dev/vda1 rw\n", id},
		{"podman rootless", "" +
			"800 790 0:60 /containers/overlay-containers/" + id + "/userdata/hostname /etc/hostname rw,nosuid,nodev,relatime - tmpfs tmpfs rw,size=3274292k,uid=1000\n", id},
		{"cri sandbox is not a container", "" +
			"900 880 253:0 /var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/" + id + "/hostname /etc/hostname rw - xfs /dev/sda1 rw\n", ""},
		{"a host", "" +
			"22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n", ""},
	}
	for _, tt := range tests {
		tab, err := mounts.Parse(strings.NewReader(tt.table))
		if err != nil {
			t.Fatalf("%s: mounts.Parse: %v", tt.name, err)
		}
		if got := docker.ContainerIDFromMounts(tab); got != tt.want {
			t.Errorf("ContainerIDFromMounts(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestContainerIDFromCgroup(t *testing.T) {
	const id = "583888ad53a06bf655340f704be886412c2254fe6095a62176c7d6e3ee304955"
	const inner = "c9d9fe70acc14ba18e911d62e783e9841d8f97899451551404d23b48834ffa82"
	tests := []struct{ name, in, want string }{
		{"cgroup v1 cgroupfs", "12:pids:/docker/" + id + "\n11:memory:/docker/" + id + "\n0::/system.slice/containerd.service\n", id},
		{"cgroup v1 systemd", "9:name=systemd:/system.slice/docker-" + id + ".scope\n", id},
		{"podman", "0::/machine.slice/libpod-" + id + ".scope/container\n1:name=systemd:/machine.slice/libpod-" + id + ".scope\n", id},
		{"nested docker", "4:cpu:/docker/" + id + "/docker/" + inner + "\n", inner},
		{"cgroup v2 private namespace", "0::/\n", ""},
		{"host", "9:name=systemd:/\n8:pids:/user.slice\n0::/system.slice/docker.service\n", ""},
	}
	for _, tt := range tests {
		got, err := docker.ContainerIDFromCgroup(strings.NewReader(tt.in))
		if err != nil || got != tt.want {
			t.Errorf("ContainerIDFromCgroup(%s) = %q, %v, want %q", tt.name, got, err, tt.want)
		}
	}
}

// TestContainerIDsFromCgroup: every container id along the first path
// that has one, outermost first: a cgroup a process in container A named
// after container V's id reads /docker/A/V, and A is the one it cannot
// choose.
func TestContainerIDsFromCgroup(t *testing.T) {
	const a = "583888ad53a06bf655340f704be886412c2254fe6095a62176c7d6e3ee304955"
	const v = "c9d9fe70acc14ba18e911d62e783e9841d8f97899451551404d23b48834ffa82"
	for _, tt := range []struct {
		name, in string
		want     []string
	}{
		{"one", "9:name=systemd:/docker/" + a + "\n", []string{a}},
		{"named after another", "9:name=systemd:/docker/" + a + "/" + v + "\n8:pids:/docker/" + a + "\n", []string{a, v}},
		{"systemd scopes", "0::/system.slice/docker-" + a + ".scope/docker-" + v + ".scope\n", []string{a, v}},
		{"host", "0::/system.slice/docker.service\n", nil},
	} {
		got, err := docker.ContainerIDsFromCgroup(strings.NewReader(tt.in))
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ContainerIDsFromCgroup(%s) = %q, %v, want %q", tt.name, got, err, tt.want)
		}
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]docker.Mode{"": docker.ModeAuto, "auto": docker.ModeAuto, "off": docker.ModeOff, "required": docker.ModeRequired} {
		if got, err := docker.ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v, want %q", in, got, err, want)
		}
	}
	if _, err := docker.ParseMode("on"); err == nil {
		t.Errorf("ParseMode(on) = nil error")
	}
}

func TestRootUpperDir(t *testing.T) {
	table := func(text string) *mounts.Table {
		tb, err := mounts.Parse(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return tb
	}
	for _, tt := range []struct{ name, text, want string }{
		{"overlay root", "1 0 0:50 / / rw,relatime - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/A:/var/lib/docker/overlay2/l/B,upperdir=/var/lib/docker/overlay2/abc/diff,workdir=/var/lib/docker/overlay2/abc/work\n", "/var/lib/docker/overlay2/abc/diff"},
		{"host root", "1 0 254:1 / / rw,relatime - ext4 /dev/vda1 rw\n", ""},
		{"overlay not at root", "1 0 254:1 / / rw - ext4 /dev/vda1 rw\n2 1 0:50 / /mnt rw - overlay overlay rw,upperdir=/x/diff\n", ""},
	} {
		if got := docker.RootUpperDir(table(tt.text)); got != tt.want {
			t.Errorf("%s: RootUpperDir = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// RootUpperDir on real container mount tables from ../shared/cases: Docker
// Desktop's overlay2 and rootless Podman's overlay name their writable
// layer; a containerd snapshot names its own.
func TestRootUpperDirCases(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "cases", "mountinfo")
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("shared case corpus missing at %s: %v", dir, err)
		}
		t.Skipf("SKIPPING: %s not found (%v)", dir, err)
	}
	for file, want := range map[string]string{
		"docker-desktop-mac-container-rootfs.txt": "/var/lib/docker/overlay2/4567ef014567ef014567ef014567ef014567ef014567ef014567ef014567ef01/diff",
		"podman-rootless-linux-container.txt":     "/home/alice/.local/share/containers/storage/overlay/",
		"k8s-containerd-xfs-rootfs.txt":           "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/",
		"linux-docker-ext4-named-volume.txt":      "/var/lib/docker/overlay2/0123abcd",
		"local-btrfs-subvol.txt":                  "",
	} {
		tb, err := mounts.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		got := docker.RootUpperDir(tb)
		if want == "" && got != "" || want != "" && !strings.HasPrefix(got, want) {
			t.Errorf("%s: RootUpperDir = %q, want %q (prefix)", file, got, want)
		}
	}
}
