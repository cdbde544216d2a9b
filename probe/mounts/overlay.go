package mounts

import (
	"path"
	"slices"
	"strings"

	"github.com/moby/sys/mountinfo"
)

// maxOverlayDepth bounds the chain of overlays whose upper directories
// lie on other overlays.
const maxOverlayDepth = 8

// ClassifyMount classifies m, a mount of t, as [Classify] does, except for
// a 9p mount over a file descriptor in a table read inside gVisor
// ([Table.GVisor]), which is gVisor's gofer (sandbox, or ephemeral at "/"),
// and for an overlay not at "/": an overlay is as safe for WAL as the filesystem
// under its upper directory (the upperdir= option, where its writes go),
// so it takes the class, platform and lock facts of the mount in t that
// holds that directory. It is unknown when the table does not show that
// mount: no upperdir= (a read-only overlay), an upper directory on no
// mount of t, or one that lies only under a container's root overlay (a
// host path this table does not show, or the writable layer). It is never
// local without that evidence.
func (t *Table) ClassifyMount(m *mountinfo.Info) Mount {
	return t.classifyMount(m, 0)
}

func (t *Table) classifyMount(m *mountinfo.Info, depth int) Mount {
	out := Classify(m)
	if t.GVisor && out.Platform != "gVisor" && strings.EqualFold(m.FSType, "9p") && hasOption(out.Options, "trans=fd") {
		return gvisorMount(m, out)
	}
	if !strings.EqualFold(m.FSType, "overlay") || m.Mountpoint == "/" {
		return out
	}
	upper := overlayUpper(out.Options)
	head := describe(m.FSType, m.Source) + ": an overlay filesystem, as safe for WAL as the filesystem under its upper directory"
	if upper == "" {
		out.Reason = head + ", and it has none (upperdir= is not among its options): that filesystem is not known"
		return out
	}
	holder := t.findExcept(upper, m)
	switch {
	case holder == nil:
		out.Reason = head + " " + upper + ", which no mount in the table holds: that filesystem is not known"
		return out
	case holder.Mountpoint == "/" && strings.EqualFold(holder.FSType, "overlay"):
		out.Reason = head + " " + upper + ", which the table shows only under the container's root overlay (a host path it does not show, or the writable layer): that filesystem is not known"
		return out
	case depth >= maxOverlayDepth:
		out.Reason = head + " " + upper + ", behind more than eight overlays: that filesystem is not known"
		return out
	}
	h := t.classifyMount(holder, depth+1)
	out.Class, out.Platform, out.KnownLosses = h.Class, h.Platform, h.KnownLosses
	out.NoLocks = out.NoLocks || h.NoLocks
	out.Reason = head + " " + upper + ", on the mount at " + h.Mountpoint + " (" + h.Reason + ")"
	return out
}

// overlayUpper returns the upperdir= option of an overlay's options,
// unescaped and cleaned, or "" when there is none or it is not absolute.
func overlayUpper(opts string) string {
	for o := range strings.SplitSeq(opts, ",") {
		if v, ok := strings.CutPrefix(o, "upperdir="); ok {
			v = unescapeOctal(v)
			if !path.IsAbs(v) {
				return ""
			}
			return path.Clean(v)
		}
	}
	return ""
}

// findExcept is Find for p among the mounts of t other than skip.
func (t *Table) findExcept(p string, skip *mountinfo.Info) *mountinfo.Info {
	var best *mountinfo.Info
	bestLen := -1
	for _, m := range t.Mounts {
		mp := m.Mountpoint
		if m == skip || !path.IsAbs(mp) || !(mp == "/" || p == mp || strings.HasPrefix(p, mp+"/")) {
			continue
		}
		if len(mp) >= bestLen {
			best, bestLen = m, len(mp)
		}
	}
	return best
}

// missingUppers lists the upper directories of t's overlays (not at "/")
// that are not in holding: the paths whose mounts a filtered read must
// keep too.
func (t *Table) missingUppers(holding []string) []string {
	var out []string
	for _, m := range t.Mounts {
		if !strings.EqualFold(m.FSType, "overlay") || m.Mountpoint == "/" {
			continue
		}
		u := overlayUpper(joinOptions(m.Options, m.VFSOptions))
		if u != "" && !slices.Contains(holding, u) && !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}
