package kubeapi_test

import (
	"encoding/json"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/kubeapi"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

func TestClassifyDriver(t *testing.T) {
	rwx := []string{kubeapi.ReadWriteMany}
	rwo := []string{kubeapi.ReadWriteOnce}
	for _, c := range []struct {
		driver string
		modes  []string
		want   mounts.Class
	}{
		{"nfs.csi.k8s.io", rwo, mounts.ClassNetwork},
		{"efs.csi.aws.com", rwx, mounts.ClassNetwork},
		{"file.csi.azure.com", rwx, mounts.ClassNetwork},
		{"cephfs.csi.ceph.com", rwx, mounts.ClassNetwork},
		{"gcsfuse.csi.storage.gke.io", rwx, mounts.ClassNetwork},
		{"driver.longhorn.io", rwx, mounts.ClassNetwork},
		{"driver.longhorn.io", rwo, mounts.ClassLocal},
		{"ebs.csi.aws.com", rwo, mounts.ClassLocal},
		{"example.com/mystery", rwo, mounts.ClassUnknown},
		{"", nil, mounts.ClassUnknown},
	} {
		if got := kubeapi.ClassifyDriver(c.driver, c.modes); got != c.want {
			t.Errorf("ClassifyDriver(%q, %v) = %v, want %v", c.driver, c.modes, got, c.want)
		}
	}
}

func TestClassifyVolumeAndPV(t *testing.T) {
	var pod kubeapi.Pod
	err := json.Unmarshal([]byte(`{"spec":{"volumes":[
		{"name":"m","emptyDir":{"medium":"Memory"}},
		{"name":"d","emptyDir":{}},
		{"name":"h","hostPath":{"path":"/srv"}},
		{"name":"n","nfs":{"server":"10.0.0.1","path":"/export/"}},
		{"name":"c","persistentVolumeClaim":{"claimName":"data"}}]}}`), &pod)
	if err != nil {
		t.Fatal(err)
	}
	want := []mounts.Class{mounts.ClassEphemeral, mounts.ClassLocal, mounts.ClassLocal, mounts.ClassNetwork}
	for i, w := range want {
		s, ok := kubeapi.ClassifyVolume(&pod.Spec.Volumes[i])
		if !ok || s.Class != w {
			t.Errorf("ClassifyVolume(%s) = %v, %v, want %v", pod.Spec.Volumes[i].Name, s.Class, ok, w)
		}
	}
	if _, ok := kubeapi.ClassifyVolume(&pod.Spec.Volumes[4]); ok {
		t.Errorf("ClassifyVolume(claim) ok = true, want false")
	}
	var pv kubeapi.PersistentVolume
	if err := json.Unmarshal([]byte(`{"spec":{"accessModes":["ReadWriteMany"],"nfs":{"server":"10.0.0.1","path":"/export"}}}`), &pv); err != nil {
		t.Fatal(err)
	}
	s := kubeapi.ClassifyPV(&pv)
	if s.Class != mounts.ClassNetwork {
		t.Errorf("ClassifyPV(nfs) = %v, want network", s.Class)
	}
	inline, _ := kubeapi.ClassifyVolume(&pod.Spec.Volumes[3])
	if !kubeapi.SameBacking(s, inline) {
		t.Errorf("SameBacking(%+v, %+v) = false, want true", s, inline)
	}
}

func TestSurgesNewPod(t *testing.T) {
	for _, c := range []struct {
		js   string
		want bool
	}{
		{`{}`, true},
		{`{"type":"Recreate"}`, false},
		{`{"type":"RollingUpdate","rollingUpdate":{"maxSurge":0}}`, false},
		{`{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"0%"}}`, false},
		{`{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%"}}`, true},
		{`{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}}`, true},
	} {
		var s kubeapi.DeploymentStrategy
		if err := json.Unmarshal([]byte(c.js), &s); err != nil {
			t.Fatal(err)
		}
		if got := s.SurgesNewPod(); got != c.want {
			t.Errorf("SurgesNewPod(%s) = %v, want %v", c.js, got, c.want)
		}
	}
}

// In-tree network sources of a PV (cephfs, glusterfs, azureFile) are
// network filesystems, as their CSI drivers are; a PV keeps its mount
// options.
func TestClassifyInTreeNetworkPV(t *testing.T) {
	for _, c := range []struct{ spec, source string }{
		{`{"cephfs":{"monitors":["10.0.0.1:6789"]},"mountOptions":["noatime"]}`, "cephfs"},
		{`{"glusterfs":{"endpoints":"g","path":"v"},"mountOptions":["noatime"]}`, "glusterfs"},
		{`{"azureFile":{"secretName":"s","shareName":"x"},"mountOptions":["noatime"]}`, "azureFile"},
	} {
		var pv kubeapi.PersistentVolume
		if err := json.Unmarshal([]byte(`{"metadata":{"name":"pv"},"spec":`+c.spec+`}`), &pv); err != nil {
			t.Fatal(err)
		}
		st := kubeapi.ClassifyPV(&pv)
		if st.Class != mounts.ClassNetwork || st.Source != c.source || len(st.MountOptions) != 1 {
			t.Errorf("ClassifyPV(%s) = %+v, want network, source %s, its mount option", c.spec, st, c.source)
		}
	}
}
