package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestHelpExamples: every command's --help has an Examples: block, and
// each example is a command line this tree accepts: the command exists and
// its flags parse (the part of the line from "preflight" to a pipe, a
// redirection or the # comment). check --help fits in 60 lines, with the
// command's own flags first and the Docker, Kubernetes and global flags
// in their own groups after them.
func TestHelpExamples(t *testing.T) {
	root := newRoot(&Globals{stdout: new(bytes.Buffer), stderr: new(bytes.Buffer)}, commands)
	var all []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.Hidden {
			all = append(all, c)
		}
		for _, sub := range c.Commands() {
			if c.Name() != "completion" { // cobra's completion bash, zsh, ...
				walk(sub)
			}
		}
	}
	walk(root)
	if len(all) < len(commands)+2 {
		t.Fatalf("%d commands in the tree, want at least %d", len(all), len(commands)+2)
	}
	for _, c := range all {
		args := strings.Fields(c.CommandPath())[1:]
		out, _, code := runMain(t, append(args, "--help")...)
		if code != 0 || !strings.Contains(out, "\nExamples:\n  preflight ") {
			t.Errorf("preflight %s --help: exit %d, no Examples: block", strings.Join(args, " "), code)
		}
		for _, line := range strings.Split(c.Example, "\n") {
			line, _, _ = strings.Cut(strings.TrimSpace(line), "#")
			if before, after, ok := strings.Cut(line, "| "); ok {
				line = after // helm template ... | preflight kube -f -
				if strings.HasPrefix(before, "preflight ") {
					line = before // preflight kube policy | kubectl apply -f -
				}
			}
			line, _, _ = strings.Cut(line, ">")
			words := strings.Fields(line)
			if len(words) == 0 || words[0] != "preflight" {
				t.Errorf("%s's example %q does not run preflight", c.Name(), line)
				continue
			}
			if i := indexOf(words, "--"); i >= 0 {
				words = words[:i] // run's CMD
			}
			sub, rest, err := root.Find(words[1:])
			if err == nil {
				err = sub.ParseFlags(rest)
			}
			if err != nil || (c != root && sub != c && sub.Parent() != c) {
				t.Errorf("%s's example %q: %v (command %s)", c.Name(), line, err, sub.Name())
			}
		}
	}
	out, _, _ := runMain(t, "check", "--help")
	if n := strings.Count(out, "\n"); n > 60 {
		t.Errorf("check --help is %d lines, want at most 60", n)
	}
	order := []string{"\nFlags:\n      --data-dir ", "\nDocker flags:\n      --docker ", "\nKubernetes flags:\n      --kube ", "\nGlobal flags:\n      --mountinfo "}
	at := 0
	for _, s := range order {
		i := strings.Index(out[at:], s)
		if i < 0 {
			t.Errorf("check --help has no %q after byte %d:\n%s", s, at, out)
			break
		}
		at += i + len(s)
	}
	if i, j := strings.Index(out, "\nFlags:\n"), strings.Index(out, "\nDocker flags:\n"); i >= 0 && j > i && strings.Contains(out[i:j], "--kube") {
		t.Error("check --help lists a Kubernetes flag among its own")
	}
}

func indexOf(words []string, w string) int {
	for i, x := range words {
		if x == w {
			return i
		}
	}
	return -1
}
