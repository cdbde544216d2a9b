// Command release-targets narrows the build matrix of a goreleaser config:
// it reads .goreleaser.yaml on stdin and writes it to stdout with each
// build's goos/goarch/goarm/ignore replaced by `targets:`, the listed
// targets (goreleaser's names: linux_amd64_v1, linux_arm_7, ...) whose
// GOOS and GOARCH that build has; with no -targets the matrix is kept.
// -dist sets the output directory. Everything else is kept as written.
// scripts/release-check.sh uses it for CI's snapshot builds.
//
//	go run ./scripts/release-targets -targets "linux_amd64_v1 linux_arm_7" -dist dist <.goreleaser.yaml
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v4"
)

func main() {
	list := flag.String("targets", "", "space-separated goreleaser targets (GOOS_GOARCH[_VARIANT])")
	dist := flag.String("dist", "", "output directory (goreleaser's dist:); empty keeps the config's")
	flag.Parse()
	if err := narrow(os.Stdin, os.Stdout, strings.Fields(*list), *dist); err != nil {
		fmt.Fprintf(os.Stderr, "release-targets: error: %v\n", err)
		os.Exit(1)
	}
}

// narrow copies the config from r to w with every build's matrix replaced
// by the targets it has (none given: kept) and dist set (empty: kept). It
// fails if r is not a YAML mapping with a builds sequence, or if a build
// keeps no target.
func narrow(r io.Reader, w io.Writer, targets []string, dist string) error {
	var doc yaml.Node
	if err := yaml.NewDecoder(r).Decode(&doc); err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || doc.Content[0].Kind != yaml.MappingNode {
		return fmt.Errorf("read config: not a YAML mapping")
	}
	top := doc.Content[0]
	if dist != "" {
		if d := value(top, "dist"); d != nil {
			d.Value = dist
		} else {
			top.Content = append(top.Content,
				&yaml.Node{Kind: yaml.ScalarNode, Value: "dist"},
				&yaml.Node{Kind: yaml.ScalarNode, Value: dist})
		}
	}
	builds := value(top, "builds")
	if builds == nil || builds.Kind != yaml.SequenceNode {
		return fmt.Errorf("read config: no builds list")
	}
	for _, b := range builds.Content {
		if len(targets) == 0 {
			break
		}
		goos, goarch := strs(value(b, "goos")), strs(value(b, "goarch"))
		var keep []*yaml.Node
		for _, t := range targets {
			parts := strings.SplitN(t, "_", 3)
			if len(parts) >= 2 && slices.Contains(goos, parts[0]) && slices.Contains(goarch, parts[1]) {
				keep = append(keep, &yaml.Node{Kind: yaml.ScalarNode, Value: t})
			}
		}
		if len(keep) == 0 {
			return fmt.Errorf("build %q: none of the targets %q", strs(value(b, "id")), targets)
		}
		var content []*yaml.Node
		for i := 0; i+1 < len(b.Content); i += 2 {
			switch b.Content[i].Value {
			case "goos", "goarch", "goarm", "ignore", "targets":
				continue
			}
			content = append(content, b.Content[i], b.Content[i+1])
		}
		b.Content = append(content,
			&yaml.Node{Kind: yaml.ScalarNode, Value: "targets"},
			&yaml.Node{Kind: yaml.SequenceNode, Content: keep})
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return enc.Close()
}

// value returns the value of key in mapping node m, or nil.
func value(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// strs returns the scalars of a sequence node, or a scalar's value.
func strs(n *yaml.Node) []string {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		return []string{n.Value}
	}
	var out []string
	for _, c := range n.Content {
		out = append(out, c.Value)
	}
	return out
}
