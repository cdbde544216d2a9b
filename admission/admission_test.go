package admission_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/admission"
	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/internal/kubetest"
	"github.com/preflight-sqlite/preflight/manifest"
	"github.com/preflight-sqlite/preflight/rules"
)

// request sends one request as admin with a YAML body and returns the
// status, the body and the Warning headers.
func request(t *testing.T, c *kubetest.Cluster, method, path string, body []byte) (int, []byte, []string) {
	t.Helper()
	r, err := c.Send(method, path, "application/yaml", body)
	if err != nil {
		t.Fatal(err)
	}
	return r.Status, r.Body, r.Warnings
}

const digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

// pod is a pod template spec (YAML, indented for spec.template.spec) of
// one container of image mounting volume "data" (source, a YAML flow
// mapping such as "persistentVolumeClaim: {claimName: db}") at path.
func pod(image, path, source string, readOnly bool) string {
	return fmt.Sprintf(`
      containers:
        - name: app
          image: %q
          volumeMounts:
            - {name: data, mountPath: %q, readOnly: %t}
      volumes:
        - {name: data, %s}`, image, path, readOnly, source)
}

// container adds fields (YAML lines indented as the container's) to pod's
// container.
func container(pod, fields string) string {
	return strings.Replace(pod, "          volumeMounts:", "          "+fields+"\n          volumeMounts:", 1)
}

const (
	claim       = "persistentVolumeClaim: {claimName: db}"
	vaultwarden = "docker.io/vaultwarden/server:1.30@" + digest
)

func deployment(name, labels, spec, podSpec string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s, labels: {%[2]s}}
spec:
  selector: {matchLabels: {app: %[1]s}}
%[3]s
  template:
    metadata: {labels: {app: %[1]s}}
    spec:%[4]s
`, name, labels, spec, podSpec)
}

func workload(kind, name, spec, podSpec string) string {
	group := "apps/v1"
	if kind == "CronJob" || kind == "Job" {
		group = "batch/v1"
	}
	switch kind {
	case "CronJob":
		return fmt.Sprintf(`apiVersion: batch/v1
kind: CronJob
metadata: {name: %s}
spec:
  schedule: "*/5 * * * *"
%s
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure%s
`, name, spec, strings.ReplaceAll(podSpec, "\n      ", "\n          "))
	case "Job":
		return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: %s}
spec:
%s
  template:
    spec:
      restartPolicy: Never%s
`, name, spec, podSpec)
	}
	return fmt.Sprintf(`apiVersion: %[1]s
kind: %[2]s
metadata: {name: %[3]s}
spec:
  selector: {matchLabels: {app: %[3]s}}
%[4]s
  template:
    metadata: {labels: {app: %[3]s}}
    spec:%[5]s
`, group, kind, name, spec, podSpec)
}

// policyCases are objects sent to the API server under the deny policy:
// refused (deny is the finding ID the refusal names) or admitted ("").
var policyCases = []struct {
	name, object string
	deny         rules.ID
	volume       string
}{
	{"deployment, two replicas, Recreate, image with registry, tag and digest",
		deployment("vw2", "", "  replicas: 2\n  strategy: {type: Recreate}", pod(vaultwarden, "/data", claim, false)), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment, one replica, default strategy",
		deployment("vw-rolling", "", "  replicas: 1", pod(vaultwarden, "/data", claim, false)), rules.RollingUpdateOnSQLiteClaim, "data"},
	{"deployment, one replica, maxSurge 1",
		deployment("vw-surge", "", "  replicas: 1\n  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}", pod(vaultwarden, "/data", claim, false)), rules.RollingUpdateOnSQLiteClaim, "data"},
	{"deployment, one replica, Recreate",
		deployment("vw-good", "", "  replicas: 1\n  strategy: {type: Recreate}", pod(vaultwarden, "/data", claim, false)), "", ""},
	{"deployment, one replica, maxSurge 0",
		deployment("vw-nosurge", "", "  replicas: 1\n  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}", pod(vaultwarden, "/data", claim, false)), "", ""},
	{"deployment, one replica, maxSurge 0%",
		deployment("vw-nosurge-pct", "", "  replicas: 1\n  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: \"0%\", maxUnavailable: 1}}", pod(vaultwarden, "/data", claim, false)), "", ""},
	{"deployment mounting above the data directory, path spelled //",
		deployment("vw-root", "", "  replicas: 3\n  strategy: {type: Recreate}", pod("VaultWarden/Server", "//", claim, false)), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment mounting inside the data directory, trailing slash",
		deployment("vw-inside", "", "  replicas: 2\n  strategy: {type: Recreate}", pod("vaultwarden/server:latest", "/data/./db/", claim, false)), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment mounting a relative path",
		deployment("vw-relative", "", "  replicas: 2\n  strategy: {type: Recreate}", pod(vaultwarden, "data", claim, false)), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment whose init container is the catalogued image",
		deployment("vw-init", "", "  replicas: 2\n  strategy: {type: Recreate}", strings.Replace(pod("alpine:3", "/data", claim, false), "      containers:", `      initContainers:
        - {name: migrate, image: "vaultwarden/server", volumeMounts: [{name: data, mountPath: /data}]}
      containers:`, 1)), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment mounting the data directory through a dot-dot path",
		deployment("vw-dotdot", "", "  replicas: 2\n  strategy: {type: Recreate}", pod(vaultwarden, "/srv/../data", claim, false)), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment mounting the root through nine slashes",
		deployment("vw-slashes", "", "  replicas: 2\n  strategy: {type: Recreate}", pod(vaultwarden, "/////////", claim, false)), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment mounting the root as /./.",
		deployment("vw-dots", "", "  replicas: 2\n  strategy: {type: Recreate}", pod(vaultwarden, "/./.", claim, false)), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment whose environment moves the data directory (DATA_FOLDER)",
		deployment("vw-moved", "", "  replicas: 2\n  strategy: {type: Recreate}", strings.Replace(pod(vaultwarden, "/srv/vw", claim, false), "          volumeMounts:", "          env: [{name: DATA_FOLDER, value: /srv/vw}]\n          volumeMounts:", 1)), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment of an image with a registry port, upper case and a tag", deployment("x1", "", "  replicas: 2\n  strategy: {type: Recreate}", pod("Registry.Local:5000/VaultWarden/Server:Latest-Alpine", "/data", claim, false)), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment of an image by digest only", deployment("x2", "", "  replicas: 2\n  strategy: {type: Recreate}", pod("vaultwarden/server@"+digest, "/data", claim, false)), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment of an image under docker.io/library/", deployment("x3", "", "  replicas: 2\n  strategy: {type: Recreate}", pod("docker.io/library/vaultwarden/server", "/data", claim, false)), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment on an inline csi volume", deployment("x4", "", "  replicas: 2\n  strategy: {type: Recreate}", pod(vaultwarden, "/data", "csi: {driver: nfs.csi.k8s.io}", false)), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment on an ephemeral claim (one per pod)", deployment("x5", "", "  replicas: 2\n  strategy: {type: Recreate}", pod(vaultwarden, "/data", "ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}}", false)), "", ""},
	{"deployment of an unknown image, labelled True (label values are case-sensitive)", deployment("x8", manifest.SQLiteLabel+`: "True"`, "  replicas: 2\n  strategy: {type: Recreate}", pod("me/app", "/var/app", claim, false)), "", ""},
	{"cronjob, Replace", workload("CronJob", "x9", "  concurrencyPolicy: Replace", pod(vaultwarden, "/data", claim, false)), "", ""},
	{"deployment whose DATA_FOLDER is a valueFrom (unknown, as kube -f takes it)", deployment("x10", "", "  replicas: 2\n  strategy: {type: Recreate}", strings.Replace(pod(vaultwarden, "/srv/vw", claim, false), "          volumeMounts:", "          env: [{name: DATA_FOLDER, valueFrom: {configMapKeyRef: {name: vw, key: dir}}}]\n          volumeMounts:", 1)), "", ""},
	{"deployment whose DATA_FOLDER moves the data, another directory mounted", deployment("x12", "", "  replicas: 2\n  strategy: {type: Recreate}", strings.Replace(pod(vaultwarden, "/backup", claim, false), "          volumeMounts:", "          env: [{name: DATA_FOLDER, value: \"/srv/vw\"}]\n          volumeMounts:", 1)), "", ""},
	{"deployment whose DATA_FOLDER, spelled //, moves the data, mounted inside it", deployment("x13", "", "  replicas: 2\n  strategy: {type: Recreate}", strings.Replace(pod(vaultwarden, "/srv/vw/db", claim, false), "          volumeMounts:", "          env: [{name: DATA_FOLDER, value: \"/srv//vw/\"}]\n          volumeMounts:", 1)), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment whose DATABASE_URL moves the database file, its directory mounted", deployment("x14", "", "  replicas: 2\n  strategy: {type: Recreate}", strings.Replace(pod(vaultwarden, "/srv/vw", claim, false), "          volumeMounts:", "          env: [{name: DATABASE_URL, value: \"/srv/vw/db.sqlite3\"}]\n          volumeMounts:", 1)), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment whose DATA_FOLDER moves the data away from the mounted /data", deployment("x15", "", "  replicas: 2\n  strategy: {type: Recreate}", strings.Replace(pod(vaultwarden, "/data", claim, false), "          volumeMounts:", "          env: [{name: DATA_FOLDER, value: \"/srv/vw\"}]\n          volumeMounts:", 1)), "", ""},
	{"deployment whose DATABASE_URL moves the database file, another directory mounted",
		deployment("x16", "", "  replicas: 2\n  strategy: {type: Recreate}", strings.Replace(pod(vaultwarden, "/backup", claim, false), "          volumeMounts:", "          env: [{name: DATABASE_URL, value: \"/srv/vw/db.sqlite3\"}]\n          volumeMounts:", 1)), "", ""},
	{"deployment of an unknown image, labelled on its pod template only", strings.Replace(deployment("x11", "", "  replicas: 2\n  strategy: {type: Recreate}", pod("me/app", "/var/app", claim, false)), "metadata: {labels: {app: x11}}", "metadata: {labels: {app: x11, preflight.io/sqlite: \"true\"}}", 1), "", ""},
	{"deployment of an unknown image whose command is preflight run --data-dir",
		deployment("run1", "", "  replicas: 2\n  strategy: {type: Recreate}", container(pod("me/app", "/var/app", claim, false), "command: [preflight, run, --data-dir, /var/app, --, app]")), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment of an unknown image, preflight in command and run --data-dir=DIR below the mount in args",
		deployment("run2", "", "  replicas: 1", container(pod("me/app", "/var/app", claim, false), "command: [/usr/local/bin/preflight]\n          args: [run, --on-unsafe, fail, \"--data-dir=/etc,/var/app/db\", --, app]")), rules.RollingUpdateOnSQLiteClaim, "data"},
	{"deployment of an unknown image, preflight run after tini --",
		deployment("run3", "", "  replicas: 2\n  strategy: {type: Recreate}", container(pod("me/app", "/var/app", claim, false), "command: [tini, --, preflight, run, --data-dir, /var/app/, --, app]")), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment of an unknown image, --data-dir after preflight run's --",
		deployment("run4", "", "  replicas: 2\n  strategy: {type: Recreate}", container(pod("me/app", "/var/app", claim, false), "command: [preflight, run, --, app, --data-dir, /var/app]")), "", ""},
	{"deployment of an unknown image, preflight run --data-dir of another directory",
		deployment("run5", "", "  replicas: 2\n  strategy: {type: Recreate}", container(pod("me/app", "/var/app", claim, false), "command: [preflight, run, --data-dir, /var/application, --, app]")), "", ""},
	{"deployment of an unknown image with PREFLIGHT_DATA_DIR",
		deployment("run6", "", "  replicas: 2\n  strategy: {type: Recreate}", container(pod("me/app", "/var/app", claim, false), "env: [{name: PREFLIGHT_DATA_DIR, value: \"/tmp, /var/app\"}]")), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment of an unknown image with PREFLIGHT_DATA_DIR from a valueFrom (unknown)",
		deployment("run7", "", "  replicas: 2\n  strategy: {type: Recreate}", container(pod("me/app", "/var/app", claim, false), "env: [{name: PREFLIGHT_DATA_DIR, valueFrom: {configMapKeyRef: {name: pf, key: dir}}}]")), "", ""},
	{"daemonset of an unknown image with PREFLIGHT_DATA_DIR on a claim",
		workload("DaemonSet", "run8", "", container(pod("me/app", "/var/app", claim, false), "env: [{name: PREFLIGHT_DATA_DIR, value: /var/app}]")), rules.DaemonsetOnSQLiteClaim, "data"},
	{"deployment of an unknown image, preflight's global --mountinfo before run",
		deployment("run9", "", "  replicas: 2\n  strategy: {type: Recreate}", container(pod("me/app", "/var/app", claim, false), "command: [preflight, --mountinfo, /host/mountinfo, run, --data-dir, /var/app, --, app]")), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment of an unknown image, preflight run in sh -c's command string, the directory quoted",
		deployment("run10", "", "  replicas: 2\n  strategy: {type: Recreate}", container(pod("me/app", "/var/app", claim, false), "command: [/bin/sh, -c]\n          args: [\"exec /usr/local/bin/preflight run --data-dir '/var/app' -- app\"]")), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment of an unknown image, a shell script of lines, --mountinfo= and --data-dir=\"DIR/\"",
		deployment("run11", "", "  replicas: 1", container(pod("me/app", "/var/app", claim, false), "command: [sh, -c, \"set -e\\n\\texec preflight  --mountinfo=/m run  --data-dir=\\\"/var/app/\\\" -- app\"]")), rules.RollingUpdateOnSQLiteClaim, "data"},
	{"deployment of an unknown image, --data-dir after the -- of preflight run in sh -c",
		deployment("run12", "", "  replicas: 2\n  strategy: {type: Recreate}", container(pod("me/app", "/var/app", claim, false), "command: [sh, -c, \"preflight run -- app --data-dir /var/app\"]")), "", ""},
	{"deployment on an inline azureFile volume", deployment("x17", "", "  replicas: 2\n  strategy: {type: Recreate}", pod(vaultwarden, "/data", "azureFile: {secretName: az, shareName: vw}", false)), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment on an inline flexVolume", deployment("x18", "", "  replicas: 1", pod(vaultwarden, "/data", "flexVolume: {driver: example.com/nas}", false)), rules.RollingUpdateOnSQLiteClaim, "data"},
	{"daemonset on an inline iscsi volume", workload("DaemonSet", "x19", "", pod(vaultwarden, "/data", "iscsi: {targetPortal: \"10.0.0.1:3260\", iqn: \"iqn.2001-04.com.example:vw\", lun: 0}", false)), rules.DaemonsetOnSQLiteClaim, "data"},
	{"deployment of an unknown image, labelled, on an inline cephfs volume", deployment("x20", manifest.SQLiteLabel+`: "true"`, "  replicas: 2\n  strategy: {type: Recreate}", pod("me/app", "/var/app", "cephfs: {monitors: [\"10.0.0.1:6789\"]}", false)), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment of an unknown image, PREFLIGHT_DATA_DIR spelled with 16 slashes",
		deployment("run13", "", "  replicas: 2\n  strategy: {type: Recreate}", container(pod("me/app", "/var/app", claim, false), "env: [{name: PREFLIGHT_DATA_DIR, value: \"////////////////var/app\"}]")), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment of an unknown image, --data-dir spelled with 16 slashes",
		deployment("run14", "", "  replicas: 2\n  strategy: {type: Recreate}", container(pod("me/app", "/var/app", claim, false), "command: [preflight, run, --data-dir, \"////////////////var/app\", --, app]")), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment whose DATA_FOLDER, spelled with 16 slashes, moves the data, mounted there", deployment("x21", "", "  replicas: 2\n  strategy: {type: Recreate}", container(pod(vaultwarden, "/srv/vw", claim, false), "env: [{name: DATA_FOLDER, value: \"////////////////srv/vw\"}]")), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment of an unrelated directory",
		deployment("vw-other", "", "  replicas: 2\n  strategy: {type: Recreate}", pod(vaultwarden, "/srv/backup", claim, false)), "", ""},
	{"deployment, read-only mount",
		deployment("vw-ro", "", "  replicas: 2\n  strategy: {type: Recreate}", pod(vaultwarden, "/data", claim, true)), "", ""},
	{"deployment on an emptyDir",
		deployment("vw-empty", "", "  replicas: 2\n  strategy: {type: Recreate}", pod(vaultwarden, "/data", "emptyDir: {}", false)), "", ""},
	{"deployment on an nfs volume",
		deployment("vw-nfs", "", "  replicas: 2\n  strategy: {type: Recreate}", pod(vaultwarden, "/data", "nfs: {server: nas, path: /export}", false)), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment of an image named after an entry",
		deployment("vw-name", "", "  replicas: 2\n  strategy: {type: Recreate}", pod("ghcr.io/someone/vaultwarden:2", "/data", claim, false)), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment of a database server image",
		deployment("pg", "", "  replicas: 2\n  strategy: {type: Recreate}", pod("postgres:16", "/var/lib/postgresql/data", claim, false)), "", ""},
	{"deployment of an unknown image, labelled",
		deployment("mine", manifest.SQLiteLabel+`: "true"`, "  replicas: 2\n  strategy: {type: Recreate}", pod("registry.example:5000/me/app:1", "/var/app", claim, false)), rules.ReplicasOnSQLiteClaim, "data"},
	{"deployment of an unknown image",
		deployment("mine-unlabelled", "", "  replicas: 2\n  strategy: {type: Recreate}", pod("registry.example:5000/me/app:1", "/var/app", claim, false)), "", ""},
	{"deployment of a catalogued image, labelled false",
		deployment("vw-exempt", manifest.SQLiteLabel+`: "false"`, "  replicas: 2", pod(vaultwarden, "/data", claim, false)), "", ""},
	{"replicaset, three replicas",
		workload("ReplicaSet", "vw-rs", "  replicas: 3", pod(vaultwarden, "/data", claim, false)), rules.ReplicasOnSQLiteClaim, "data"},
	{"statefulset, two replicas on one claim",
		workload("StatefulSet", "vw-sts", "  replicas: 2\n  serviceName: vw", pod(vaultwarden, "/data", claim, false)), rules.ReplicasOnSQLiteClaim, "data"},
	{"statefulset, two replicas, a claim each",
		workload("StatefulSet", "vw-sts-own", "  replicas: 2\n  serviceName: vw\n  volumeClaimTemplates:\n    - metadata: {name: data}\n      spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}",
			pod(vaultwarden, "/data", "emptyDir: {}", false)), "", ""},
	{"daemonset on a claim",
		workload("DaemonSet", "vw-ds", "", pod(vaultwarden, "/data", claim, false)), rules.DaemonsetOnSQLiteClaim, "data"},
	{"daemonset on a hostPath",
		workload("DaemonSet", "vw-ds-host", "", pod(vaultwarden, "/data", "hostPath: {path: /var/lib/vw}", false)), "", ""},
	{"cronjob, default concurrencyPolicy",
		workload("CronJob", "vw-cron", "", pod(vaultwarden, "/data", claim, false)), rules.CronjobOverlapOnSQLiteClaim, "data"},
	{"cronjob, Forbid",
		workload("CronJob", "vw-cron-forbid", "  concurrencyPolicy: Forbid", pod(vaultwarden, "/data", claim, false)), "", ""},
	{"job, parallelism 2",
		workload("Job", "vw-job", "  parallelism: 2", pod(vaultwarden, "/data", claim, false)), rules.ReplicasOnSQLiteClaim, "data"},
}

var collections = map[string]string{
	"Deployment": "/apis/apps/v1/namespaces/%s/deployments", "ReplicaSet": "/apis/apps/v1/namespaces/%s/replicasets",
	"StatefulSet": "/apis/apps/v1/namespaces/%s/statefulsets", "DaemonSet": "/apis/apps/v1/namespaces/%s/daemonsets",
	"CronJob": "/apis/batch/v1/namespaces/%s/cronjobs", "Job": "/apis/batch/v1/namespaces/%s/jobs",
}

func kindOf(t *testing.T, object string) string {
	t.Helper()
	objs, err := manifest.Parse(strings.NewReader(object), "case.yaml")
	if err != nil || len(objs) != 1 {
		t.Fatalf("parse case: %v\n%s", err, object)
	}
	return objs[0].Kind
}

// TestPolicyOnAPIServer applies the policy (deny, bound to namespace pol)
// to a real kube-apiserver, which compiles its CEL, then creates each case
// there: a refused one names the finding, the object, the volume and the
// lint's remedy; an admitted one is created. preflight kube -f judges each
// case the same way (the refused ones get the finding, the admitted ones
// none of the rules the policy enforces).
func TestPolicyOnAPIServer(t *testing.T) {
	c := kubetest.Start(t)
	y, err := admission.Policy(admission.Options{Namespaces: []string{"pol"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(y); err != nil {
		t.Fatalf("create the policy: %v", err)
	}
	c.MustApply("apiVersion: v1\nkind: Namespace\nmetadata: {name: pol}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: free}\n")
	enforced := []rules.ID{rules.ReplicasOnSQLiteClaim, rules.RollingUpdateOnSQLiteClaim, rules.DaemonsetOnSQLiteClaim, rules.CronjobOverlapOnSQLiteClaim}
	for _, pc := range policyCases {
		kind := kindOf(t, pc.object)
		// The policy's bindings take a moment to be seen by the admission
		// plugin: retry an admitted bad object for up to 10 s.
		var status int
		var body []byte
		for range 50 {
			status, body, _ = request(t, c, http.MethodPost, fmt.Sprintf(collections[kind], "pol")+"?dryRun=All", []byte(pc.object))
			if pc.deny == "" || status != http.StatusCreated {
				break
			}
			sleep()
		}
		var st struct{ Message string }
		_ = json.Unmarshal(body, &st)
		if pc.deny == "" {
			if status != http.StatusCreated {
				t.Errorf("%s: HTTP %d, want 201 (admitted): %s", pc.name, status, st.Message)
			}
		} else {
			fix := strings.ReplaceAll(strings.Join(rules.ManifestRemedy(pc.deny), " "), "the patch below", "the patch preflight kube -f and kube audit print")
			if status != http.StatusForbidden && status != http.StatusUnprocessableEntity || !strings.Contains(st.Message, string(pc.deny)+": "+kind) ||
				!strings.Contains(st.Message, "volume "+pc.volume) || !strings.Contains(st.Message, fix) {
				t.Errorf("%s: HTTP %d %q, want refused naming %s, volume %s and the fix %q", pc.name, status, st.Message, pc.deny, pc.volume, fix)
			}
		}
		if status, _, _ := request(t, c, http.MethodPost, fmt.Sprintf(collections[kind], "free")+"?dryRun=All", []byte(pc.object)); status != http.StatusCreated {
			t.Errorf("%s: in namespace free, not bound: HTTP %d, want 201", pc.name, status)
		}
		objs, err := manifest.Parse(strings.NewReader(pc.object), "case.yaml")
		if err != nil {
			t.Fatal(err)
		}
		r, err := preflight.CheckKube(preflight.KubeOptions{Objects: objs, Files: []string{"case.yaml"}})
		if err != nil {
			t.Fatal(err)
		}
		var got []rules.ID
		for _, f := range r.Findings {
			if slices.Contains(enforced, f.ID) {
				got = append(got, f.ID)
			}
		}
		if pc.deny == "" && len(got) > 0 || pc.deny != "" && !slices.Contains(got, pc.deny) {
			t.Errorf("%s: preflight kube -f finds %v, the policy %q", pc.name, got, pc.deny)
		}
	}
}

func sleep() { time.Sleep(200 * time.Millisecond) }

// TestPolicyWarn binds the policy with --action warn: the API server
// admits a bad Deployment and sends the refusal as a Warning header;
// --action audit admits it without one; a policy with a user's catalogue
// entry refuses that entry's image and the built-in ones.
func TestPolicyWarn(t *testing.T) {
	c := kubetest.Start(t)
	for _, a := range []struct{ action, ns string }{{admission.ActionWarn, "warned"}, {admission.ActionAudit, "audited"}} {
		y, err := admission.Policy(admission.Options{Name: "preflight-" + a.action, Action: a.action, Namespaces: []string{a.ns}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Create(y); err != nil {
			t.Fatalf("create the %s policy: %v", a.action, err)
		}
		c.MustApply("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + a.ns + "}\n")
	}
	bad := deployment("vw", "", "  replicas: 2\n  strategy: {type: Recreate}", pod(vaultwarden, "/data", claim, false))
	var warnings []string
	for range 50 {
		status, body, w := request(t, c, http.MethodPost, "/apis/apps/v1/namespaces/warned/deployments?dryRun=All", []byte(bad))
		if status != http.StatusCreated {
			t.Fatalf("--action warn: HTTP %d, want 201 (admitted with a warning): %s", status, body)
		}
		if warnings = w; len(w) > 0 {
			break
		}
		sleep()
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], string(rules.ReplicasOnSQLiteClaim)+": Deployment vw runs 2 pods at once and mounts volume data") {
		t.Errorf("--action warn: Warning headers %q, want one naming %s, the Deployment and volume data", warnings, rules.ReplicasOnSQLiteClaim)
	}
	t.Logf("Warning: %s", warnings)
	status, _, w := request(t, c, http.MethodPost, "/apis/apps/v1/namespaces/audited/deployments?dryRun=All", []byte(bad))
	if status != http.StatusCreated || len(w) != 0 {
		t.Errorf("--action audit: HTTP %d with warnings %q, want 201 and none", status, w)
	}

	// A user's catalogue entry (--catalogue) is compiled in beside the
	// built-in ones.
	mine, err := compose.ParseCatalogue([]byte("apps:\n  - name: ledger\n    images: [acme/ledger]\n    data_dirs: [/var/lib/ledger]\n    source: https://example.com/ledger\n"))
	if err != nil {
		t.Fatal(err)
	}
	y, err := admission.Policy(admission.Options{Name: "preflight-custom", Namespaces: []string{"custom"}, Catalogue: mine.Merge(compose.Builtin())})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(y); err != nil {
		t.Fatalf("create the policy with a user entry: %v", err)
	}
	c.MustApply("apiVersion: v1\nkind: Namespace\nmetadata: {name: custom}\n")
	ledger := deployment("ledger", "", "  replicas: 2\n  strategy: {type: Recreate}", pod("registry.acme.example/acme/ledger:7", "/var/lib", claim, false))
	for range 50 {
		if status, _, _ = request(t, c, http.MethodPost, "/apis/apps/v1/namespaces/custom/deployments?dryRun=All", []byte(ledger)); status != http.StatusCreated {
			break
		}
		sleep()
	}
	if status != http.StatusForbidden {
		t.Errorf("a user entry's image with two replicas: HTTP %d, want 403", status)
	}
	if status, _, _ := request(t, c, http.MethodPost, "/apis/apps/v1/namespaces/custom/deployments?dryRun=All", []byte(deployment("vw", "", "  replicas: 2\n  strategy: {type: Recreate}", pod(vaultwarden, "/data", claim, false)))); status != http.StatusForbidden {
		t.Errorf("a built-in entry's image beside a user entry: HTTP %d, want 403", status)
	}
}

// TestPolicyOptions: the bindings' namespace selector and actions, and an
// unknown action refused.
func TestPolicyOptions(t *testing.T) {
	y, err := admission.Policy(admission.Options{Action: admission.ActionAudit, ExcludeNamespaces: []string{"kube-system"}, NamespaceLabels: map[string]string{"team": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifest.Parse(bytes.NewReader(y), "policy.yaml")
	if err != nil {
		t.Fatalf("the policy does not parse: %v", err)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.Kind)
		if o.Kind != "ValidatingAdmissionPolicyBinding" {
			continue
		}
		var b struct {
			Spec struct {
				ValidationActions []string `json:"validationActions"`
				MatchResources    struct {
					NamespaceSelector struct {
						MatchLabels      map[string]string `json:"matchLabels"`
						MatchExpressions []struct {
							Key, Operator string
							Values        []string
						} `json:"matchExpressions"`
					} `json:"namespaceSelector"`
				} `json:"matchResources"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(o.JSON, &b); err != nil {
			t.Fatal(err)
		}
		sel := b.Spec.MatchResources.NamespaceSelector
		if !slices.Equal(b.Spec.ValidationActions, []string{"Audit"}) || sel.MatchLabels["team"] != "a" || len(sel.MatchExpressions) != 1 ||
			sel.MatchExpressions[0].Operator != "NotIn" || !slices.Equal(sel.MatchExpressions[0].Values, []string{"kube-system"}) {
			t.Errorf("binding %s: %s", o.Name, o.JSON)
		}
	}
	if len(kinds) != 12 {
		t.Errorf("Policy wrote %v, want a policy and a binding for each of 6 kinds", kinds)
	}
	if _, err := admission.Policy(admission.Options{Action: "block"}); err == nil {
		t.Error("Policy(Action: block) = nil error, want one")
	}
}
