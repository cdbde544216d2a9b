package docker

import (
	"slices"
	"strings"

	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"
)

// Recognize tells the engine kind from GET /info and GET /version fields.
// It is a pure function. Signals, first match wins (after ddev
// pkg/dockerutil/providers.go, checked against values these engines report):
//
//   - podman: a /version component named "Podman Engine";
//   - docker-desktop: OperatingSystem or Platform.Name starting "Docker Desktop",
//     or Name containing "docker-desktop";
//   - orbstack: OperatingSystem starting "OrbStack", Name or KernelVersion
//     containing "orbstack";
//   - rancher-desktop: OperatingSystem starting "Rancher Desktop", or Name
//     containing "rancher-desktop" (its macOS VM is "lima-rancher-desktop");
//   - colima: Name starting "colima" (one VM per profile: colima, colima-PROFILE);
//   - lima: Name starting "lima-" (lima-INSTANCE);
//   - docker: any other engine that reported a version; unknown otherwise.
//
// Rootless is SecurityOptions containing "name=rootless". CrossesVM is true
// for the desktop kinds and Lima; Recognize cannot see where its caller
// runs, so Probe and friends also set it for a Linux engine reached from a
// non-Linux client.
func Recognize(info system.Info, version client.ServerVersionResult) Engine {
	e := Engine{
		Version:         version.Version,
		APIVersion:      version.APIVersion,
		OS:              info.OSType,
		KernelVersion:   info.KernelVersion,
		OperatingSystem: info.OperatingSystem,
		Name:            info.Name,
		Platform:        version.Platform.Name,
	}
	if e.OS == "" {
		e.OS = version.Os
	}
	if e.Version == "" {
		e.Version = info.ServerVersion
	}
	e.Rootless = slices.ContainsFunc(info.SecurityOptions, func(s string) bool {
		return s == "name=rootless" || strings.HasPrefix(s, "name=rootless,")
	})
	opsys := info.OperatingSystem
	name := strings.ToLower(info.Name)
	switch {
	case slices.ContainsFunc(version.Components, func(c system.ComponentVersion) bool {
		return strings.HasPrefix(c.Name, "Podman Engine")
	}):
		e.Kind = KindPodman
	case strings.HasPrefix(opsys, "Docker Desktop") || strings.HasPrefix(version.Platform.Name, "Docker Desktop") ||
		strings.Contains(name, "docker-desktop"):
		e.Kind = KindDockerDesktop
	case strings.HasPrefix(opsys, "OrbStack") || strings.Contains(name, "orbstack") ||
		strings.Contains(info.KernelVersion, "orbstack"):
		e.Kind = KindOrbStack
	case strings.HasPrefix(opsys, "Rancher Desktop") || strings.Contains(name, "rancher-desktop"):
		e.Kind = KindRancherDesktop
	case strings.HasPrefix(name, "colima"):
		e.Kind = KindColima
	case strings.HasPrefix(name, "lima-"):
		e.Kind = KindLima
	case e.Version != "":
		e.Kind = KindDocker
	default:
		e.Kind = KindUnknown
	}
	switch e.Kind {
	case KindDockerDesktop, KindOrbStack, KindRancherDesktop, KindColima, KindLima:
		e.CrossesVM = true
	}
	return e
}
