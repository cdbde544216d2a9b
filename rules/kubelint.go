package rules

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/preflight-sqlite/preflight/internal/kubeapi"
	"github.com/preflight-sqlite/preflight/internal/shell"
	"github.com/preflight-sqlite/preflight/manifest"
	"github.com/preflight-sqlite/preflight/policy"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/report"
)

// manifestRules judge Kubernetes manifests (preflight kube), one workload
// volume that holds SQLite data at a time (Report.Kube.Mounts, subject
// km); appended to rules in init. Each finding names the object and, where
// a JSON merge patch fixes it, carries that patch (kubePatches).
var manifestRules = []rule{
	{
		Rule: Rule{DuplicateManifestKey, LevelWarn, "kube: a key is written twice in one mapping of a manifest (the YAML decoder refuses that; kubectl keeps the last value, and warns under strict field validation): the last value was read, the earlier ones were dropped"}, scope: ScopeManifestKey,
		match: func(s subject) (string, Level, bool) {
			d := s.kd
			where := "at the top"
			if d.Path != "" {
				where = "in " + d.Path
			}
			return fmt.Sprintf("%s line %d: key %q of %s is written %d times %s (earlier at line %s): the value at line %d was read, as kubectl reads it, and the earlier ones were dropped",
				d.At.File, d.At.Line, d.Key, d.Object, len(d.Dropped)+1, where, kubeLines(d.Dropped), d.At.Line), "", true
		},
		remedy: func(s subject) []string {
			return []string{fmt.Sprintf("Keep one %q in %s: delete the lines the cluster ignores, or move the value meant to count to the last one.", s.kd.Key, s.kd.At.File)}
		},
	},
	{
		Rule: Rule{RollingUpdateOnSQLiteClaim, LevelWarn, "kube: a Deployment whose update is a RollingUpdate with maxSurge above 0 (the default) mounts a volume that holds SQLite data: each update starts the new pod while the old one still writes the database (error on a network filesystem, and on a ReadWriteMany claim of any class)"}, scope: ScopeManifest,
		match: func(s subject) (string, Level, bool) {
			w := kubeWorkload(s)
			if !kubeWriter(s) || w.Kind != manifest.KindDeployment || !w.Surge || !kubeShared(s.km) {
				return "", "", false
			}
			surge := "maxSurge " + w.MaxSurge
			if w.MaxSurge == "" {
				surge = "maxSurge 25%, the default, which rounds up to one pod"
			}
			return fmt.Sprintf("%s updates by %s (%s) and mounts %s (%s): every rollout starts the new pod while the old one still has the database open; on one node that is two writers of one database, on two nodes a ReadWriteOnce claim holds the new pod at Multi-Attach, and on a shared network volume %s",
				w.Key(), w.Strategy, surge, kubeVolumeWhat(s), s.km.Why, kubeTwoKernels(s)), kubeLevel(s), true
		},
		remedy: func(s subject) []string {
			return []string{
				"Stop the old pod before the new one starts: strategy Recreate (the patch below; kubectl rollout restart follows it too). Recreate does not cover evictions through the Eviction API (a drain): give the claim ReadWriteOncePod where the storage driver supports it, or run the application as a StatefulSet with replicas: 1.",
			}
		},
	},
	{
		Rule: Rule{ReplicasOnSQLiteClaim, LevelWarn, "kube: a Deployment, StatefulSet, ReplicaSet or Job runs more than one pod (replicas or parallelism above 1) on one volume that holds SQLite data (error on a network filesystem, and on a ReadWriteMany claim of any class)"}, scope: ScopeManifest,
		match: func(s subject) (string, Level, bool) {
			w := kubeWorkload(s)
			if !kubeWriter(s) || w.PerNode || w.Kind == manifest.KindPod || w.Replicas <= 1 || !kubeShared(s.km) {
				return "", "", false
			}
			what := "replicas"
			if w.Kind == manifest.KindJob || w.Kind == manifest.KindCronJob {
				what = "parallelism"
			}
			return fmt.Sprintf("%s runs %s: %d and every pod mounts %s (%s): %d processes write one database at once, and on a shared network volume %s",
				w.Key(), what, w.Replicas, kubeVolumeWhat(s), s.km.Why, w.Replicas, kubeTwoKernels(s)), kubeLevel(s), true
		},
		remedy: func(s subject) []string {
			return []string{
				"Run one pod: the patch below (replicas: 1; a Job: parallelism: 1). SQLite applications are single-instance: scale by giving each instance its own claim (a StatefulSet's volumeClaimTemplates), not by sharing one.",
			}
		},
	},
	{
		Rule: Rule{CronjobOverlapOnSQLiteClaim, LevelWarn, "kube: a CronJob whose runs may overlap (concurrencyPolicy Allow, the default) mounts a shared volume that holds SQLite data: a run that outlasts its interval has the next one start beside it (error on a network filesystem, and on a ReadWriteMany claim of any class)"}, scope: ScopeManifest,
		match: func(s subject) (string, Level, bool) {
			w := kubeWorkload(s)
			if !kubeWriter(s) || w.Kind != manifest.KindCronJob || !w.Overlap || !kubeShared(s.km) {
				return "", "", false
			}
			policy := w.Strategy
			if w.StrategyDefault {
				policy += " (the default: the field is absent)"
			}
			return fmt.Sprintf("%s has concurrencyPolicy %s and mounts %s (%s): a run still going when the next is due is joined by it, two writers of one database, and on a shared network volume %s",
				w.Key(), policy, kubeVolumeWhat(s), s.km.Why, kubeTwoKernels(s)), kubeLevel(s), true
		},
		remedy: func(s subject) []string {
			return []string{
				"Never run two at once: concurrencyPolicy Forbid (the patch below) skips a run while the previous one goes on; Replace stops the previous one first, which may interrupt a transaction mid-way.",
			}
		},
	},
	{
		Rule: Rule{RWXOnNetworkClass, LevelError, "kube: a claim that holds SQLite data asks for ReadWriteMany on a network filesystem (NFS, EFS, Azure Files, CephFS, Longhorn ReadWriteMany, ...): pods on several nodes may write it, and their locks never meet (warn for a StatefulSet's volumeClaimTemplate, a claim per replica, and when the claim's storage is not in the input: ReadWriteMany is offered only by shared filesystems)"}, scope: ScopeManifest,
		match: func(s subject) (string, Level, bool) {
			c := kubeClaim(s)
			if !kubeWriter(s) || c == nil || !slices.Contains(c.AccessModes, kubeapi.ReadWriteMany) || !kubeFirstOfClaim(s) {
				return "", "", false
			}
			switch c.Storage.Class {
			case mounts.ClassNetwork:
				if c.Template != "" {
					return fmt.Sprintf("the volumeClaimTemplate %s of %s asks for ReadWriteMany on a network filesystem (%s%s) for %s: each replica has a claim of its own, but ReadWriteMany lets any other pod, on any node, mount it beside the replica, and their locks never meet",
						c.Name, kubeWorkload(s).Key(), c.StorageFrom, kubeDriver(c.Storage), s.km.Why), LevelWarn, true
				}
				return fmt.Sprintf("claim %s (%s) asks for ReadWriteMany on a network filesystem (%s%s) and %s mounts it (%s): pods on other nodes are other kernels, whose POSIX locks and WAL shared memory never meet, so two of them corrupt the database",
					c.Key(), kubeClaimWhere(c), c.StorageFrom, kubeDriver(c.Storage), kubeWorkload(s).Key(), s.km.Why), "", true
			case mounts.ClassUnknown:
				return fmt.Sprintf("claim %s (%s) asks for ReadWriteMany and %s mounts it (%s); its storage is unknown here (%s), and ReadWriteMany is offered only by shared filesystems (NFS, CephFS, EFS, Azure Files, Longhorn's NFS share), where pods on other nodes write the database without locks that meet",
					c.Key(), kubeClaimWhere(c), kubeWorkload(s).Key(), s.km.Why, c.StorageFrom), LevelWarn, true
			}
			return "", "", false
		},
		remedy: func(s subject) []string {
			return []string{
				"Give the database a claim one pod at a time can write: ReadWriteOncePod (CSI drivers; ReadWriteOnce for in-tree volumes, which a node does not enforce on NFS) on a block StorageClass (a local disk, EBS, a Persistent Disk, Ceph RBD, Longhorn ReadWriteOnce). A claim's access modes cannot change once it exists: edit the manifest as the patch below does, create the claim under a new name and copy the data once with preflight migrate while the application is stopped.",
				"If the data must stay on the share: one writer pod (replicas: 1, strategy Recreate) and journal_mode=DELETE (preflight run exports PREFLIGHT_JOURNAL_MODE=delete).",
			}
		},
	},
	{
		Rule: Rule{LivePodsOnSQLiteClaim, LevelError, "kube audit: pods of one workload run now on one claim that holds SQLite data, mounted read-write, on different nodes: two kernels write the database, whose locks never meet (warn when they run on one node: two writers, their locks shared)"}, scope: ScopeManifest, commands: []string{"kube audit"},
		match: func(s subject) (string, Level, bool) {
			c := kubeClaim(s)
			if !kubeWriter(s) || c == nil || s.km.Source != "claim" {
				return "", "", false
			}
			w := kubeWorkload(s)
			var pods, nodes []string
			for _, p := range w.Running {
				if !slices.Contains(p.Claims, c.Name) {
					continue
				}
				pods = append(pods, p.Name+" on "+cmp.Or(p.Node, "no node yet"))
				if p.Node != "" && !slices.Contains(nodes, p.Node) {
					nodes = append(nodes, p.Node)
				}
			}
			if len(pods) < 2 {
				return "", "", false
			}
			lvl := LevelWarn
			if len(nodes) > 1 {
				lvl = LevelError
			}
			on := fmt.Sprintf("%s, each a writer of the database", count(len(nodes), "node", "nodes"))
			if len(nodes) == 1 {
				on = "1 node, whose kernel their locks share: two writers of the database"
			}
			return fmt.Sprintf("%d pods of %s run now and mount claim %s (%s; %s) read-write: %s; %s",
				len(pods), w.Key(), c.Key(), kubeClaimWhere(c), s.km.Why, strings.Join(pods, ", "), on), lvl, true
		},
		remedy: func(s subject) []string {
			return []string{
				onePodNow(kubeWorkload(s)) + ", then give the claim ReadWriteOncePod so that a second pod cannot mount it; check the database with preflight check --deep once one pod is left.",
			}
		},
	},
	{
		Rule: Rule{SQLiteClaimOnNetwork, LevelWarn, "kube audit: a claim that holds SQLite data is bound to a PersistentVolume on a network filesystem (nfs, cephfs, glusterfs, azureFile; CSI drivers such as nfs.csi.k8s.io, smb.csi.k8s.io, cephfs.csi.ceph.com, efs.csi.aws.com, file.csi.azure.com): POSIX locks across nodes are not reliable there, and WAL's shared memory never crosses a node (error when the PV's mount options keep locks on the node: nolock, nobrl, local_lock=all or posix)"}, scope: ScopeManifest, commands: []string{"kube audit"},
		match: func(s subject) (string, Level, bool) {
			c := kubeClaim(s)
			if !kubeWriter(s) || c == nil || c.Template != "" || c.At == nil || !c.At.Live() || !c.FromPV() || c.Storage.Class != mounts.ClassNetwork || !kubeFirstOfClaim(s) {
				return "", "", false
			}
			on := c.Storage.Source
			switch {
			case c.Storage.Driver != "":
				on = "CSI driver " + c.Storage.Driver
			case c.Storage.NFSServer != "":
				on = "nfs " + c.Storage.NFSServer + ":" + c.Storage.NFSPath
			}
			if local := localLocks(c.Storage.MountOptions); local != "" {
				return fmt.Sprintf("claim %s (%s) is bound to PersistentVolume %s on %s, a network filesystem, mounted with %s: each node keeps its locks to itself, so pods on two nodes (a rollout, a reschedule, a second replica) write the database without seeing each other's locks, even in DELETE mode",
					c.Key(), s.km.Why, c.Volume, on, local), LevelError, true
			}
			return fmt.Sprintf("claim %s (%s) is bound to PersistentVolume %s on %s, a network filesystem: POSIX locks across nodes are not reliable there (the server's lock manager, leases that lapse), and WAL's shared memory never crosses a node, so a second pod on another node (a rollout, a reschedule) can corrupt the database",
				c.Key(), s.km.Why, c.Volume, on), "", true
		},
		remedy: func(s subject) []string {
			return []string{
				"Move the database to a block volume that one node mounts: a claim with accessModes [ReadWriteOncePod] on a block StorageClass (a local disk, EBS, a Persistent Disk, Azure Disk, Ceph RBD, Longhorn ReadWriteOnce); copy it once with preflight migrate while the application is stopped.",
				"If it must stay on the share: one writer pod (replicas: 1, strategy Recreate), journal_mode=DELETE (preflight run exports PREFLIGHT_JOURNAL_MODE=delete), and mount options that keep locks on the server (no nolock, nobrl or local_lock).",
			}
		},
	},
	{
		Rule: Rule{LinterAnnotationConflict, LevelWarn, "kube: a Deployment that mounts a shared volume holding SQLite data carries annotations that ask kube-score or Polaris to hold it to RollingUpdate or more than one replica (kube-score/enable: deployment-strategy or deployment-replicas; polaris.fairwinds.com/deploymentMissingReplicas-exempt other than \"true\"): those linters then ask for, or Polaris's mutation makes, a second writer"}, scope: ScopeManifest,
		match: func(s subject) (string, Level, bool) {
			w := kubeWorkload(s)
			if !kubeWriter(s) || !kubeShared(s.km) || !kubeFirstOfWorkload(s) {
				return "", "", false
			}
			conf := linterConflicts(w)
			if len(conf) == 0 {
				return "", "", false
			}
			return fmt.Sprintf("%s mounts %s (%s) and carries %s: kube-score then wants RollingUpdate and 2 replicas, and Polaris's deploymentMissingReplicas 2 or more (its mutation sets 3), each one more writer of the database",
				w.Key(), kubeVolumeWhat(s), s.km.Why, strings.Join(conf, " and ")), "", true
		},
		remedy: func(s subject) []string {
			return []string{
				"Exempt the object from those checks instead (the patch below): kube-score/ignore: deployment-strategy,deployment-replicas and polaris.fairwinds.com/deploymentMissingReplicas-exempt: \"true\", without deployment-strategy or deployment-replicas in kube-score/enable.",
			}
		},
	},
	{
		Rule: Rule{DaemonsetOnSQLiteClaim, LevelError, "kube: a DaemonSet (one pod on every node) mounts a shared volume that holds SQLite data: every node's pod writes the one database from its own kernel"}, scope: ScopeManifest,
		match: func(s subject) (string, Level, bool) {
			w := kubeWorkload(s)
			if !kubeWriter(s) || !w.PerNode || !kubeShared(s.km) || s.km.Source == "hostPath" {
				return "", "", false
			}
			return fmt.Sprintf("%s runs a pod on every node and each mounts %s (%s): one writer per node, each on its own kernel, whose locks never meet; a ReadWriteOnce claim instead holds every pod but one at Multi-Attach",
				w.Key(), kubeVolumeWhat(s), s.km.Why), "", true
		},
		remedy: func(s subject) []string {
			return []string{
				"Run the application as a Deployment with replicas: 1 and strategy Recreate (or a StatefulSet with replicas: 1); a DaemonSet that needs a database per node keeps it on the node (hostPath, a local PersistentVolume), never on one shared claim.",
			}
		},
	},
	{
		Rule: Rule{SharedSQLiteClaim, LevelWarn, "kube: a claim that holds SQLite data is mounted read-write by more than one workload (error on a network filesystem, and on a ReadWriteMany claim of any class)"}, scope: ScopeManifest,
		match: func(s subject) (string, Level, bool) {
			c := kubeClaim(s)
			if !kubeWriter(s) || c == nil || c.Template != "" || !kubeFirstOfData(s) {
				return "", "", false
			}
			others := kubeOtherWriters(s)
			if len(others) == 0 {
				return "", "", false
			}
			return fmt.Sprintf("claim %s (%s) is mounted read-write by %s and by %s: each is another writer of the database, and on a shared network volume %s",
				c.Key(), s.km.Why, kubeWorkload(s).Key(), strings.Join(others, ", "), kubeTwoKernels(s)), kubeLevel(s), true
		},
		remedy: func(s subject) []string {
			return []string{
				"Give the database one writing workload; mount the claim with readOnly: true in the others (a backup sidecar such as litestream that is meant to share it belongs in the writer's pod, or --ignore shared-sqlite-claim).",
			}
		},
	},
	{
		Rule: Rule{ClaimNotJudged, LevelWarn, "kube: a read-write claim of an image not in the catalogue (its content is unknown: it may hold SQLite data) is on shared storage (ReadWriteMany, or a network filesystem) and written by several pods at once (replicas above 1, a RollingUpdate with surge, a DaemonSet, a CronJob whose runs may overlap), so no rule could judge it; a claim of one writer is only listed under not judged"}, scope: ScopeManifest,
		match: func(s subject) (string, Level, bool) {
			c := kubeClaim(s)
			if s.km.SQLite || s.km.ReadOnly || s.km.OtherEngine != "" || c == nil || c.Template != "" || !policy.WritersCorrupt(c.Storage.Class, kubeManyNodes(s)) {
				return "", "", false
			}
			many := kubeManyWriters(kubeWorkload(s))
			if many == "" {
				return "", "", false
			}
			return fmt.Sprintf("%s %s and mounts claim %s (volume %s at %s; %s) read-write; its image is not in the catalogue, so nothing says whether the claim holds SQLite data: if it does, that is several writers of one database, and on shared storage %s",
				kubeWorkload(s).Key(), many, c.Key(), s.km.Volume, strings.Join(s.km.Paths, ","), kubeClaimWhere(c), kubeTwoKernels(s)), "", true
		},
		remedy: func(s subject) []string {
			c := kubeClaim(s)
			return []string{fmt.Sprintf("If claim %s holds SQLite data, name it (--data-claim %s) and it is judged, with the patch that leaves one writer; if it does not, --ignore claim-not-judged.", c.Key(), c.Key())}
		},
	},
}

// localLocks names the mount options that keep byte-range locks on the
// client (the node), not the server: nolock (NFS), nobrl (SMB/CIFS),
// local_lock=all or posix (NFS); "" when none does.
func localLocks(opts []string) string {
	var out []string
	for _, o := range opts {
		for _, f := range strings.Split(o, ",") {
			switch f = strings.TrimSpace(f); f {
			case "nolock", "nobrl", "local_lock=all", "local_lock=posix":
				out = append(out, f)
			}
		}
	}
	return strings.Join(out, ",")
}

// kubeManyWriters says how the workload runs several pods at once on its
// volumes (replicas above 1, an update that starts the new pod first, a
// pod per node, CronJob runs that may overlap); empty when it runs one.
func kubeManyWriters(w *manifest.Workload) string {
	switch {
	case w.PerNode:
		return "runs a pod on every node"
	case w.Kind != manifest.KindPod && w.Replicas > 1:
		return fmt.Sprintf("runs %d pods", w.Replicas)
	case w.Kind == manifest.KindDeployment && w.Surge:
		return "updates by " + w.Strategy + " (the new pod starts while the old one runs)"
	case w.Kind == manifest.KindCronJob && w.Overlap:
		return "has concurrencyPolicy " + w.Strategy + " (a run may start while the last one goes on)"
	}
	return ""
}

// onePodNow is the command that leaves the workload's pods that run now
// at one: kubectl scale for the kinds with a scale subresource, a
// parallelism patch for a Job or a CronJob's jobs (the running Jobs of a
// CronJob go on: delete all but one).
func onePodNow(w *manifest.Workload) string {
	ns := ""
	if w.Namespace != "" {
		ns = " -n " + shell.Quote(w.Namespace)
	}
	obj := shell.Quote(strings.ToLower(w.Kind) + "/" + w.Name)
	switch w.Kind {
	case manifest.KindJob:
		return fmt.Sprintf("Run one pod now: kubectl patch%s %s --type merge -p %s", ns, obj, shell.Quote(`{"spec":{"parallelism":1}}`))
	case manifest.KindCronJob:
		return fmt.Sprintf("Start no more runs beside the last: kubectl patch%s %s --type merge -p %s, and delete all but one of its running Jobs (kubectl get jobs%s)", ns, obj, shell.Quote(`{"spec":{"concurrencyPolicy":"Forbid","jobTemplate":{"spec":{"parallelism":1}}}}`), ns)
	case manifest.KindDaemonSet, manifest.KindPod:
		return fmt.Sprintf("Stop all but one of its pods now (a %s cannot be scaled: run the application as a Deployment with replicas: 1)", w.Kind)
	}
	return fmt.Sprintf("Scale it to one pod now: kubectl scale%s %s --replicas=1", ns, obj)
}

// kubePatches give, for a finding ID, the JSON merge patch that fixes it
// (nil when none does); evaluateManifests attaches it to the finding.
var kubePatches = map[ID]func(s subject) *report.KubePatch{
	RollingUpdateOnSQLiteClaim: func(s subject) *report.KubePatch {
		return workloadPatch(s, `{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}`)
	},
	ReplicasOnSQLiteClaim: func(s subject) *report.KubePatch {
		switch kubeWorkload(s).Kind {
		case manifest.KindJob:
			return workloadPatch(s, `{"spec":{"parallelism":1}}`)
		case manifest.KindCronJob:
			return workloadPatch(s, `{"spec":{"jobTemplate":{"spec":{"parallelism":1}}}}`)
		}
		return workloadPatch(s, `{"spec":{"replicas":1}}`)
	},
	RWXOnNetworkClass: claimPatch,
	LinterAnnotationConflict: func(s subject) *report.KubePatch {
		return workloadPatch(s, `{}`)
	},
	CronjobOverlapOnSQLiteClaim: func(s subject) *report.KubePatch {
		return workloadPatch(s, `{"spec":{"concurrencyPolicy":"Forbid"}}`)
	},
}

// evaluateManifests runs the manifest key rules over every duplicate key
// of r.Manifests, then the kube rules over every mount, in table order per
// mount, attaching each finding's patch.
func evaluateManifests(r *Report, base subject) []Finding {
	var out []Finding
	for i := range r.Manifests.DuplicateKeys {
		s := base
		s.kd = &r.Manifests.DuplicateKeys[i]
		n := len(out)
		out = appendScope(out, ScopeManifestKey, s)
		for j := n; j < len(out); j++ {
			out[j].At = &s.kd.At
		}
	}
	for i := range r.Manifests.Mounts {
		for _, rl := range table {
			if rl.scope != ScopeManifest {
				continue
			}
			s := base
			s.km = &r.Manifests.Mounts[i]
			n := len(out)
			out = appendMatch(out, rl, s)
			if p := kubePatches[rl.ID]; len(out) > n && p != nil {
				out[n].Patch = p(s)
			}
		}
	}
	return out
}

// kubeLines lists line numbers: "12", "12 and 15", "12, 15 and 19".
func kubeLines(ls []int) string {
	var out []string
	for _, l := range ls {
		out = append(out, fmt.Sprint(l))
	}
	if len(out) < 2 {
		return strings.Join(out, "")
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
}

func kubeWorkload(s subject) *manifest.Workload { return &s.r.Manifests.Workloads[s.km.Workload] }

// kubeClaim is the mount's claim, or nil for a volume that is not one.
func kubeClaim(s subject) *manifest.Claim {
	if s.km.Claim < 0 {
		return nil
	}
	return &s.r.Manifests.Claims[s.km.Claim]
}

// kubeWriter reports whether the mount holds SQLite data read-write.
func kubeWriter(s subject) bool { return s.km.SQLite && !s.km.ReadOnly }

// kubeShared reports whether every pod of the workload mounts the same
// storage (manifest.Mount.Shared).
func kubeShared(m *manifest.Mount) bool { return m.Shared() }

// manifestClass is the class of the storage behind the mount.
func manifestClass(s subject) mounts.Class {
	if c := kubeClaim(s); c != nil {
		return c.Storage.Class
	}
	return s.km.Storage.Class
}

// kubeLevel is error when several writers of the mount's storage corrupt
// the database (policy.WritersCorrupt: a network or other WAL-unsafe
// filesystem, or a ReadWriteMany claim of any class), else the rule's
// level.
func kubeLevel(s subject) Level {
	if policy.WritersCorrupt(manifestClass(s), kubeManyNodes(s)) {
		return LevelError
	}
	return ""
}

// kubeManyNodes reports whether the mount's claim lets several nodes
// mount it read-write (ReadWriteMany).
func kubeManyNodes(s subject) bool {
	c := kubeClaim(s)
	return c != nil && slices.Contains(c.AccessModes, kubeapi.ReadWriteMany)
}

// kubeTwoKernels says what the mount's storage makes of two writers.
func kubeTwoKernels(s subject) string {
	switch c := manifestClass(s); {
	case policy.WALUnsafe(c):
		return "(this one: " + string(c) + ") pods on two nodes are two kernels whose locks never meet, which corrupts a WAL database"
	case kubeManyNodes(s):
		return "(this one is a ReadWriteMany claim, which several nodes mount read-write: shared storage, whatever its class) pods on two nodes are two kernels whose locks never meet, which corrupts the database"
	case c == mounts.ClassUnknown:
		return "(this one's storage is unknown here) pods on two nodes are two kernels whose locks never meet, which corrupts a WAL database"
	}
	return "pods on two nodes would be two kernels whose locks never meet"
}

func kubeVolumeWhat(s subject) string {
	if c := kubeClaim(s); c != nil {
		return fmt.Sprintf("claim %s (volume %s; %s)", c.Key(), s.km.Volume, kubeClaimWhere(c))
	}
	return fmt.Sprintf("%s volume %s", s.km.Source, s.km.Volume)
}

// kubeClaimWhere says what backs a claim.
func kubeClaimWhere(c *manifest.Claim) string {
	if c.Storage.Class == mounts.ClassUnknown {
		return "storage unknown: " + c.StorageFrom
	}
	return fmt.Sprintf("%s, from %s", c.Storage.Class, c.StorageFrom)
}

func kubeDriver(st kubeapi.Storage) string {
	switch {
	case st.Driver != "":
		return ", driver " + st.Driver
	case st.NFSServer != "":
		return ", NFS " + st.NFSServer + ":" + st.NFSPath
	}
	return ""
}

// kubeFirstOfClaim reports whether the subject is the first writer mount
// of its claim: claim-wide findings are reported once, there.
func kubeFirstOfClaim(s subject) bool {
	for i := range s.r.Manifests.Mounts {
		m := &s.r.Manifests.Mounts[i]
		if m.Claim == s.km.Claim && m.SQLite && !m.ReadOnly {
			return m == s.km
		}
	}
	return false
}

// kubeFirstOfWorkload reports whether the subject is the first shared
// writer mount of its workload: workload-wide findings are reported once.
func kubeFirstOfWorkload(s subject) bool {
	for i := range s.r.Manifests.Mounts {
		m := &s.r.Manifests.Mounts[i]
		if m.Workload == s.km.Workload && m.SQLite && !m.ReadOnly && kubeShared(m) {
			return m == s.km
		}
	}
	return false
}

// kubeIndex is the subject's index in r.Manifests.Mounts.
func kubeIndex(s subject) int {
	for i := range s.r.Manifests.Mounts {
		if &s.r.Manifests.Mounts[i] == s.km {
			return i
		}
	}
	return -1
}

// kubeFirstOfData reports whether no earlier writer mount of the
// subject's claim, of another workload, shares SQLite data with it (one
// reaching where the other keeps it): shared-sqlite-claim is reported
// once per group of workloads that write one database, at its first.
func kubeFirstOfData(s subject) bool {
	a, me := s.r.Manifests, kubeIndex(s)
	for j := 0; j < me; j++ {
		m := &a.Mounts[j]
		if m.Claim == s.km.Claim && m.Workload != s.km.Workload && kubeWriter(subject{km: m}) && (a.SharesData(j, me) || a.SharesData(me, j)) {
			return false
		}
	}
	return true
}

// kubeOtherWriters names the other workloads that mount the subject's
// claim read-write where it holds the subject's SQLite data (by subPath:
// subPath sonarr/config and radarr/config of one claim are two
// directories, not one database).
func kubeOtherWriters(s subject) []string {
	var out []string
	a, me := s.r.Manifests, kubeIndex(s)
	for j := range a.Mounts {
		m := &a.Mounts[j]
		if m.Claim != s.km.Claim || m.ReadOnly || m.Workload == s.km.Workload || !a.SharesData(me, j) {
			continue
		}
		if k := a.Workloads[m.Workload].Key(); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// workloadPatch is a merge patch of the subject's workload, which kubectl
// patch applies to the live object, with the annotations that keep
// kube-score and Polaris from asking for the change back
// (withLinterAnnotations).
func workloadPatch(s subject, patch string) *report.KubePatch {
	w := kubeWorkload(s)
	patch = withLinterAnnotations(w, patch)
	cmd := fmt.Sprintf("kubectl patch %s %s", strings.ToLower(w.Kind), shell.Quote(w.Name))
	if w.Namespace != "" {
		cmd += " -n " + shell.Quote(w.Namespace)
	}
	cmd += " --type merge -p " + shell.Quote(patch)
	return &report.KubePatch{Kind: w.Kind, Name: w.Name, Namespace: w.Namespace, At: w.At, Merge: json.RawMessage(patch), Live: true, Command: cmd}
}

// claimPatch is the merge patch that gives the subject's claim (or its
// StatefulSet's volumeClaimTemplates) one writer's access mode. Access
// modes cannot change on a created claim: the patch is for the manifest
// (kubectl patch --local -f FILE when the file holds that object alone).
func claimPatch(s subject) *report.KubePatch {
	c := kubeClaim(s)
	o := s.r.Manifests.Object(c.Object)
	if o == nil {
		return nil
	}
	mode := kubeapi.ReadWriteOncePod
	switch c.Storage.Source {
	case "nfs", "cephfs", "glusterfs", "azureFile":
		mode = kubeapi.ReadWriteOnce // in-tree sources have no ReadWriteOncePod (a CSI access mode)
	}
	var patch []byte
	if c.Template != "" {
		patch = templatesPatch(o, c.Name, mode)
	} else {
		patch, _ = json.Marshal(map[string]any{"spec": map[string]any{"accessModes": []string{mode}}})
	}
	if patch == nil {
		return nil
	}
	p := &report.KubePatch{Kind: o.Kind, Name: o.Name, Namespace: o.Namespace, At: o.At, Merge: patch}
	if n := s.r.Manifests.ObjectsIn(o.At.File); n == 1 && o.At.File != "-" && !o.At.Live() {
		p.Command = fmt.Sprintf("kubectl patch --local -f %s --type merge -p %s -o yaml", shell.Quote(o.At.File), shell.Quote(string(patch)))
	}
	return p
}

// templatesPatch returns the merge patch that sets the access modes of
// the StatefulSet's volumeClaimTemplate name: a merge patch replaces a
// list whole, so the patch holds every template, as written, with that
// one changed. Nil when the object does not decode.
func templatesPatch(o *manifest.Object, name, mode string) []byte {
	var obj struct {
		Spec struct {
			Templates []map[string]any `json:"volumeClaimTemplates"`
		} `json:"spec"`
	}
	if json.Unmarshal(o.JSON, &obj) != nil {
		return nil
	}
	for _, t := range obj.Spec.Templates {
		md, _ := t["metadata"].(map[string]any)
		spec, _ := t["spec"].(map[string]any)
		if md != nil && spec != nil && md["name"] == name {
			spec["accessModes"] = []string{mode}
		}
	}
	b, err := json.Marshal(map[string]any{"spec": map[string]any{"volumeClaimTemplates": obj.Spec.Templates}})
	if err != nil {
		return nil
	}
	return b
}

// MergePatches merges the patches of the findings that are not ignored
// into one per object (kind, namespace and name), in the order the
// objects first have one: a JSON merge patch of the union of the fields
// (RFC 7386 composes: a later patch's field wins; their objects merge),
// which kubectl patch applies in one request. A merged patch is live when
// every one of its patches is (a claim's or a volumeClaimTemplate's is
// for the manifest only); its command is that of its patches' kind, with
// the merged document. Nil when no finding has a patch.
func MergePatches(fs []Finding) []report.KubePatch {
	var out []report.KubePatch
	docs := []map[string]any{}
	first := []*report.KubePatch{} // the one patch of an object that has one
	for _, f := range fs {
		p := f.Patch
		if p == nil || f.Ignored {
			continue
		}
		var doc map[string]any
		if json.Unmarshal(p.Merge, &doc) != nil {
			continue
		}
		i := slices.IndexFunc(out, func(o report.KubePatch) bool {
			return o.Kind == p.Kind && o.Namespace == p.Namespace && o.Name == p.Name
		})
		if i < 0 {
			out = append(out, report.KubePatch{Kind: p.Kind, Name: p.Name, Namespace: p.Namespace, At: p.At, Live: true})
			docs = append(docs, map[string]any{})
			first = append(first, p)
			i = len(out) - 1
		} else {
			first[i] = nil
		}
		m := &out[i]
		mergeInto(docs[i], doc)
		if !slices.Contains(m.Fixes, f.ID) {
			m.Fixes = append(m.Fixes, f.ID)
		}
		switch {
		case !p.Live && m.Live:
			m.Live, m.Command = false, p.Command
		case p.Live == m.Live && m.Command == "":
			m.Command = p.Command
		}
	}
	for i := range out {
		if p := first[i]; p != nil {
			// One patch: as the finding has it, keys in its order.
			out[i].Merge, out[i].Live, out[i].Command = p.Merge, p.Live, p.Command
			continue
		}
		b, err := json.Marshal(docs[i])
		if err != nil {
			panic(err) // decoded JSON encodes
		}
		out[i].Merge = b
		if prefix, _, ok := strings.Cut(out[i].Command, " --type merge -p "); ok {
			cmd := prefix + " --type merge -p " + shell.Quote(string(b))
			if !out[i].Live {
				cmd += " -o yaml"
			}
			out[i].Command = cmd
		}
	}
	return out
}

// mergeInto applies merge patch src to dst as RFC 7386 composes two
// patches: objects merge key by key, any other value (null included)
// replaces.
func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		sv, ok := v.(map[string]any)
		dv, ok2 := dst[k].(map[string]any)
		if ok && ok2 {
			mergeInto(dv, sv)
			continue
		}
		dst[k] = v
	}
}

// ManifestRemedy is the remedy that the manifest rule id gives (for the
// reference's example object: the kube rules' remedies name no object),
// as preflight kube policy writes it into its refusals; nil when id is
// not a manifest rule.
func ManifestRemedy(id ID) []string {
	for _, r := range manifestRules {
		if r.ID == id {
			return exampleRemedy(r)
		}
	}
	return nil
}
