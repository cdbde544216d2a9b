package admission_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/admission"
	"github.com/preflight-sqlite/preflight/internal/kubetest"
)

// bigPod is a pod spec of containers containers, each mounting every one
// of volumes claims at its own path.
func bigPod(containers, volumes int, image string) string {
	var b strings.Builder
	b.WriteString("\n      containers:")
	for c := range containers {
		fmt.Fprintf(&b, "\n        - name: c%d\n          image: %q\n          volumeMounts:", c, image)
		for v := range volumes {
			fmt.Fprintf(&b, "\n            - {name: v%d, mountPath: /mnt/c%d/v%d}", v, c, v)
		}
	}
	b.WriteString("\n      volumes:")
	for v := range volumes {
		fmt.Fprintf(&b, "\n        - {name: v%d, persistentVolumeClaim: {claimName: claim-%d}}", v, v)
	}
	return b.String()
}

// TestPolicyCost: the API server evaluates the policy within its CEL cost
// budget for a large Deployment (20 containers, each mounting 30 claims):
// one that holds no SQLite data is admitted, not refused for the cost;
// the same with the data directory mounted is refused by the rule.
func TestPolicyCost(t *testing.T) {
	c := kubetest.Start(t)
	y, err := admission.Policy(admission.Options{Namespaces: []string{"big"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(y); err != nil {
		t.Fatal(err)
	}
	c.MustApply("apiVersion: v1\nkind: Namespace\nmetadata: {name: big}\n")
	good := deployment("big", "", "  replicas: 3\n  strategy: {type: Recreate}", bigPod(20, 30, "registry.example.com/team/some-long-image-name:1.2.3@"+digest))
	bad := strings.Replace(good, "mountPath: /mnt/c19/v29}", "mountPath: /data}", 1)
	bad = strings.Replace(bad, "name: c19\n          image: \"registry.example.com/team/some-long-image-name:1.2.3@"+digest+"\"", "name: c19\n          image: \"vaultwarden/server\"", 1)
	for range 50 {
		status, body, _ := request(t, c, http.MethodPost, "/apis/apps/v1/namespaces/big/deployments?dryRun=All", []byte(bad))
		if status != http.StatusCreated {
			if !strings.Contains(string(body), "replicas-on-sqlite-claim: Deployment big") {
				t.Errorf("the large Deployment with the data directory: HTTP %d %s, want refused by replicas-on-sqlite-claim", status, body)
			}
			break
		}
		sleep()
	}
	if status, body, _ := request(t, c, http.MethodPost, "/apis/apps/v1/namespaces/big/deployments?dryRun=All", []byte(good)); status != http.StatusCreated {
		t.Errorf("the large Deployment without SQLite data: HTTP %d %s, want 201", status, body)
	}

	// 60 containers of 100 mounts each, every one running preflight run
	// (its declared directories read once per container, not per mount),
	// and one container with 2,000 arguments of 100 bytes: decided, the
	// declared directory elsewhere admitted, on a mount refused.
	run := func(dir string) string {
		return strings.ReplaceAll(bigPod(60, 100, "me/app"), "          volumeMounts:", "          command: [preflight, run, --data-dir, "+dir+", --, app]\n          volumeMounts:")
	}
	var long []string
	for i := range 2000 {
		long = append(long, fmt.Sprintf("--opt%d=%s", i, strings.Repeat("x", 100)))
	}
	longArgs := func(dir string) string {
		return container(pod("me/app", "/var/app", claim, false), "command: [preflight, run, --data-dir, "+dir+", --, app]\n          args: [\""+strings.Join(long, "\", \"")+"\"]")
	}
	for _, tc := range []struct {
		name, spec string
		refused    bool
	}{
		{"60 containers running preflight run, declaring another directory", run("/elsewhere"), false},
		{"60 containers running preflight run, one declaring a mount", strings.Replace(run("/elsewhere"), "/elsewhere", "/mnt/c0/v0", 1), true},
		{"2,000 arguments, declaring another directory", longArgs("/elsewhere"), false},
		{"2,000 arguments, declaring the mount", longArgs("/var/app"), true},
	} {
		status, body, _ := request(t, c, http.MethodPost, "/apis/apps/v1/namespaces/big/deployments?dryRun=All",
			[]byte(deployment("run", "", "  replicas: 2\n  strategy: {type: Recreate}", tc.spec)))
		switch {
		case tc.refused && (status != http.StatusForbidden || !strings.Contains(string(body), "replicas-on-sqlite-claim: Deployment run")):
			t.Errorf("%s: HTTP %d %.600s, want refused by replicas-on-sqlite-claim", tc.name, status, body)
		case !tc.refused && status != http.StatusCreated:
			t.Errorf("%s: HTTP %d %.600s, want 201", tc.name, status, body)
		}
	}
}
