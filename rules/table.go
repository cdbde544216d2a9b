package rules

import "slices"

// table is the one rules table: every finding preflight makes comes from
// here, and this is its order. Rules() lists it in this order (the SARIF
// rules, check's --ignore check), and Evaluate keeps it within each scope.
//
//  1. pathRules (paths.go): data directories, filesystems, database files.
//  2. healthRules (health.go): header, journal, WAL, integrity, --probe-fs.
//  3. shareRules (share.go): shares whose locks stay local, soft NFS, NFS
//     silly-rename files.
//  4. writerRules (writers.go): live writers, the Docker probe.
//  5. reportRules (report.go): the report as a whole.
//  6. swarmRules (swarm.go): Swarm services and compose deploy: keys.
//  7. kubeRules (kube.go): other pods, our owner, the Kubernetes API.
//  8. composeRules (compose.go): compose service mounts.
//  9. manifestRules (kubelint.go): Kubernetes manifests (preflight kube).
//  10. convertRules (convert.go): convert's refusals.
//
// A new group of rules is a slice in its own file, named here; a new rule
// is an entry in its group's slice, an ID in ids.go and a row in a
// findings table of docs/ (TestDocsFindings).
var table = slices.Concat(pathRules, healthRules, shareRules, writerRules, reportRules, swarmRules, kubeRules, composeRules, manifestRules, convertRules)
