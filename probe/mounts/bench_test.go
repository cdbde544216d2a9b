package mounts_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// BenchmarkClassify10000 parses a 10,000-line mountinfo table (a busy
// Kubernetes node) and classifies a path on the deepest-listed mount.
func BenchmarkClassify10000(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString("1 0 0:30 / / rw,relatime master:1 - overlay overlay rw,lowerdir=/l/a:/l/b,upperdir=/u/diff,workdir=/u/work\n")
	for i := 2; i <= 10000; i++ {
		fmt.Fprintf(&buf, "%d 1 253:%d /var/lib/kubelet/pods/%08d/volumes /var/lib/kubelet/pods/%08d/volumes/kubernetes.io~csi/pvc-%d/mount rw,relatime shared:%d - nfs4 10.0.0.%d:/export/pvc-%d rw,vers=4.1,rsize=1048576,wsize=1048576,hard,proto=tcp,local_lock=none,addr=10.0.0.5\n", i, i%256, i, i, i, i, i%250, i)
	}
	data := buf.Bytes()
	target := "/var/lib/kubelet/pods/00009999/volumes/kubernetes.io~csi/pvc-9999/mount/app.db"
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		tab, err := mounts.Parse(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		m, err := tab.Classify(target)
		if err != nil {
			b.Fatal(err)
		}
		if m.Class != mounts.ClassNetwork {
			b.Fatalf("Classify(%q) = %v, want %v", target, m.Class, mounts.ClassNetwork)
		}
	}
}
