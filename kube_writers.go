package preflight

import (
	"github.com/preflight-sqlite/preflight/probe/kube"
	"github.com/preflight-sqlite/preflight/report"
)

// attributePods adds the pods that mount db's storage read-write to
// db.Writers and says in db.WriterProbes how sure the Kubernetes probe is.
func attributePods(db *Database, k *kube.Result) {
	p := &db.WriterProbes
	switch k.Status {
	case kube.StatusOff, kube.StatusNotInCluster, "":
		return
	}
	p.Kube = report.ProbeStatus(k.Status)
	var path *kube.Path
	for i := range k.Paths {
		if k.Paths[i].Path == db.Path {
			path = &k.Paths[i]
		}
	}
	switch {
	case k.Status == kube.StatusNoPod && (k.Config == nil || k.Config.Source != "in-cluster"):
	case k.Status != kube.StatusRan && k.Status != kube.StatusDenied, path == nil:
		p.Blind = append(p.Blind, "pods: Kubernetes API "+string(k.Status)+nonEmptyPrefix(": ", k.Err))
	case !path.Sure:
		p.Blind = append(p.Blind, "pods: "+nonEmpty(k.Err, "the API's answer is incomplete"))
	}
	if path == nil {
		return
	}
	for i := range path.Writers {
		w := path.Writers[i]
		db.Writers = append(db.Writers, Writer{Kind: report.WriterPod, Pod: &w, Relation: w.Relation})
	}
}
