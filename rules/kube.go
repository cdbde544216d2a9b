package rules

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/preflight-sqlite/preflight/internal/shell"
	"github.com/preflight-sqlite/preflight/manifest"
	"github.com/preflight-sqlite/preflight/policy"
	"github.com/preflight-sqlite/preflight/probe/kube"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
	"github.com/preflight-sqlite/preflight/report"
)

// kubeRules are the findings from the Kubernetes API (probe/kube):
// other pods on the same storage, our owner's replicas and update
// strategy, and an API that could not be asked. Appended after the
// writer rules in init.
var kubeRules = []rule{
	{
		Rule: Rule{LiveWriterPod, LevelInfo, "another pod mounts this database's storage read-write (the same claim, or another PV with the same NFS export or CSI volume handle; Kubernetes API): on another node it is another kernel, warn, and error for WAL on a network filesystem"}, scope: ScopeDatabase,
		match: func(s subject) (string, Level, bool) {
			var who []string
			lvl := LevelInfo
			for _, w := range s.db.Writers {
				if w.Kind != report.WriterPod {
					continue
				}
				who = append(who, fmt.Sprintf("%s, %s", w.Name(), w.Pod.Relation))
				switch {
				case w.Pod.SameNode:
				case s.db.JournalMode == sqlitefile.JournalWAL && policy.WALUnsafe(s.class()):
					lvl = LevelError
				case lvl != LevelError:
					lvl = LevelWarn
				}
			}
			if len(who) == 0 {
				return "", "", false
			}
			what := ""
			switch lvl {
			case LevelError:
				what = fmt.Sprintf(": WAL on a %s filesystem from another node, whose locks and -shm never meet ours: their WAL frames can interleave now", s.class())
			case LevelWarn:
				what = ": a pod on another node is another kernel, which no process, lock or activity probe here can see; two writers across network locks"
			}
			return fmt.Sprintf("%s is mounted read-write by %s%s", filepath.Base(s.db.Path), strings.Join(who, "; "), what), lvl, true
		},
		remedy: func(s subject) []string {
			out := stopWriters("pod")(s)
			return append(out, "Give the database one writing pod: replicas: 1 with strategy: Recreate, or a StatefulSet whose volumeClaimTemplates use accessModes: [ReadWriteOncePod].")
		},
	},
	{
		Rule: Rule{RollingUpdateOnSQLiteClaim, LevelWarn, "our pod's Deployment updates with RollingUpdate (maxSurge above 0) on a claim that holds SQLite data: every rollout starts the new pod beside the old one on the same database"}, scope: ScopeDatabase,
		match: func(s subject) (string, Level, bool) {
			o, pp := kubeOwnerClaim(s)
			if o == nil || o.Kind != "Deployment" || !o.Surges {
				return "", "", false
			}
			return fmt.Sprintf("%s is on claim %s of Deployment %s/%s, whose strategy is %s with maxSurge %s: a rollout runs the new pod beside the old one on this database (on one node both open it; on two a ReadWriteMany claim lets both write)", filepath.Base(s.db.Path), pp.Claim, s.r.Kube.Pod.Namespace, o.Name, o.Strategy, o.MaxSurge), "", true
		},
		remedy: func(s subject) []string {
			o, _ := kubeOwnerClaim(s)
			ns := s.r.Kube.Pod.Namespace
			return []string{
				fmt.Sprintf("Stop the old pod before the new one starts: kubectl -n %s patch deployment %s --type merge -p %s", shell.Quote(ns), shell.Quote(o.Name),
					shell.Quote(withLinterAnnotations(ownerWorkload(o), `{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}`))),
				"Recreate does not stop the Eviction API: a node drain evicts the pod and the replacement can start while the old one is still terminating; add a PodDisruptionBudget with maxUnavailable: 0 for manual drains, or use a StatefulSet with a ReadWriteOncePod claim, whose controller starts the new pod only after the old one is gone.",
			}
		},
	},
	{
		Rule: Rule{ReplicasOnSQLiteClaim, LevelWarn, "our pod's owner runs more than one replica on one claim that holds SQLite data: every replica writes the same database (error for WAL on a network filesystem)"}, scope: ScopeDatabase,
		match: func(s subject) (string, Level, bool) {
			o, pp := kubeOwnerClaim(s)
			if o == nil || o.Replicas < 2 || ownClaim(o, pp.Claim) {
				return "", "", false
			}
			lvl := LevelWarn
			if s.db.JournalMode == sqlitefile.JournalWAL && policy.WALUnsafe(s.class()) {
				lvl = LevelError
			}
			return fmt.Sprintf("%s is on claim %s, mounted by all %d replicas of %s %s/%s", filepath.Base(s.db.Path), pp.Claim, o.Replicas, o.Kind, s.r.Kube.Pod.Namespace, o.Name), lvl, true
		},
		remedy: func(s subject) []string {
			o, _ := kubeOwnerClaim(s)
			ns := s.r.Kube.Pod.Namespace
			return []string{
				oneReplica(o, ns),
				"SQLite takes one writing pod; scale out through the application, or a StatefulSet whose volumeClaimTemplates give each replica its own ReadWriteOncePod claim.",
			}
		},
	},
	{
		Rule: Rule{KubeUnreachable, LevelInfo, "the Kubernetes API did not answer (unreachable, timed out, failed, or our pod was not found), so other pods could not be checked: reported when a database exists (error with --kube required, always)"}, scope: ScopeReport,
		match: func(s subject) (string, Level, bool) {
			k := s.r.Kube
			if k == nil {
				return "", "", false
			}
			required := s.opt.KubeRequired
			switch k.Status {
			case kube.StatusUnreachable, kube.StatusTimeout, kube.StatusFailed:
			case kube.StatusDenied:
				if len(k.Denied) > 0 {
					return "", "", false // kube-permission-denied names them
				}
				// 401: the token was refused (expired, revoked)
			case kube.StatusNoPod:
				if !required && k.Config != nil && k.Config.Source != "in-cluster" {
					return "", "", false // a kubeconfig outside a pod, no --pod: nothing to ask about
				}
			default:
				return "", "", false
			}
			lvl := Level("")
			if required {
				lvl = LevelError
			} else if !anyDatabase(s.r) {
				return "", "", false
			}
			return fmt.Sprintf("other pods not checked: Kubernetes API %s (%s)", k.Status, nonEmpty(k.Err, "no detail")), lvl, true
		},
		remedy: func(s subject) []string {
			return []string{"Let the pod reach the API server with its service account token (automountServiceAccountToken: true, the Role in examples/kubernetes/), set POD_NAME and POD_NAMESPACE through the downward API, or pass --kube off."}
		},
	},
	{
		Rule: Rule{KubePermissionDenied, LevelInfo, "RBAC refused a request the Kubernetes probe needs (the verb and resource are named), so other pods may have been missed: reported when a database exists (error with --kube required)"}, scope: ScopeReport,
		match: func(s subject) (string, Level, bool) {
			k := s.r.Kube
			if k == nil || len(k.Denied) == 0 {
				return "", "", false
			}
			lvl := Level("")
			if s.opt.KubeRequired {
				lvl = LevelError
			} else if !anyDatabase(s.r) {
				return "", "", false
			}
			var perms []string
			for _, p := range k.Denied {
				perms = append(perms, p.String())
			}
			return fmt.Sprintf("other pods not fully checked: the service account may not %s", strings.Join(perms, ", ")), lvl, true
		},
		remedy: func(s subject) []string {
			var out []string
			for _, p := range s.r.Kube.Denied {
				scope := "a Role and RoleBinding in namespace " + p.Namespace
				if p.Namespace == "" {
					scope = "a ClusterRole and ClusterRoleBinding"
				}
				out = append(out, fmt.Sprintf("Grant %s on %s through %s (examples/kubernetes/).", p.Verb, groupResource(p), scope))
			}
			return out
		},
	},
}

func groupResource(p kube.Permission) string {
	if p.Group != "" {
		return p.Resource + "." + p.Group
	}
	return p.Resource
}

// kubePath is the Kubernetes probe's entry for the subject's database (or
// data directory); nil when there is none.
func kubePath(s subject) *kube.Path {
	if s.r == nil || s.r.Kube == nil {
		return nil
	}
	p := s.dir.Path
	if s.db != nil {
		p = s.db.Path
	}
	for i := range s.r.Kube.Paths {
		if s.r.Kube.Paths[i].Path == p {
			return &s.r.Kube.Paths[i]
		}
	}
	return nil
}

// kubeClass is the class the Kubernetes objects give the subject's
// storage (PV, StorageClass, CSI driver, volume type), when they resolved
// to a known one: an unknown driver is reported in the facts but does not
// override the mount table, which saw the filesystem itself.
func kubeClass(s subject) (mounts.Class, bool) {
	pp := kubePath(s)
	if pp == nil || pp.Storage.Class == "" || pp.Storage.Class == mounts.ClassUnknown {
		return "", false
	}
	return pp.Storage.Class, true
}

// kubeOwnerClaim returns our pod's owner and the subject's path when the
// database is on a claim.
func kubeOwnerClaim(s subject) (*kube.Owner, *kube.Path) {
	pp := kubePath(s)
	if pp == nil || pp.Claim == "" || s.r.Kube.Owner == nil || s.r.Kube.Pod == nil {
		return nil, nil
	}
	return s.r.Kube.Owner, pp
}

// ownClaim reports whether claim is one a StatefulSet gives each replica
// from its volumeClaimTemplates ("TEMPLATE-SET-ORDINAL").
func ownClaim(o *kube.Owner, claim string) bool {
	for _, t := range o.ClaimTemplates {
		if strings.HasPrefix(claim, t+"-"+o.Name+"-") {
			return true
		}
	}
	return false
}

// kubeReason says which Kubernetes object gave the subject its class, when
// that class is riskier than the mount table's ("PV data-pv: nfs
// 10.0.0.5:/export, claim data; the mount table says ext4 /dev/sda1").
func kubeReason(s subject) (string, bool) {
	k, ok := kubeClass(s)
	m := s.mount()
	if !ok || m == nil || !policy.Riskier(k, m.Class) {
		return "", false
	}
	pp := kubePath(s)
	what := pp.Storage.Source
	switch {
	case pp.Storage.NFSServer != "":
		what += " " + pp.Storage.NFSServer + ":" + pp.Storage.NFSPath
	case pp.Storage.Driver != "":
		what += " driver " + pp.Storage.Driver
	}
	obj := "volume " + pp.Volume
	if pp.PV != "" {
		obj = "PV " + pp.PV + " of claim " + pp.Claim
	} else if pp.Claim != "" {
		obj = "claim " + pp.Claim
	}
	return fmt.Sprintf("%s: %s, %s; the mount table says %s", obj, strings.TrimSpace(what), k, m.Reason), true
}

// ownerWorkload is our pod's owner as the workload linterAnnotations
// judges.
func ownerWorkload(o *kube.Owner) *manifest.Workload {
	return &manifest.Workload{Kind: o.Kind, Name: o.Name, Annotations: o.Annotations}
}

// oneReplica is the command that scales our pod's owner to one replica: a
// Deployment's merge patch with the annotations that keep kube-score and
// Polaris from asking for more, else kubectl scale.
func oneReplica(o *kube.Owner, ns string) string {
	if o.Kind == manifest.KindDeployment {
		return fmt.Sprintf("Run one replica: kubectl -n %s patch deployment %s --type merge -p %s (and set replicas: 1 in its manifest).", shell.Quote(ns), shell.Quote(o.Name),
			shell.Quote(withLinterAnnotations(ownerWorkload(o), `{"spec":{"replicas":1}}`)))
	}
	return fmt.Sprintf("Run one replica: kubectl -n %s scale %s %s --replicas=1 (and set replicas: 1 in its manifest).", shell.Quote(ns), strings.ToLower(o.Kind), shell.Quote(o.Name))
}
