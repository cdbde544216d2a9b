// Command testprobe is a test-only program for the probe/docker tests,
// built static into a FROM scratch image.
//
//	testprobe sleep                       wait for SIGTERM or SIGINT, then exit 0
//	testprobe probe [-timeout D] PATH...  print docker.Probe(PATH...) as JSON
//	testprobe writers [-volume V] [-path P] [-timeout D]
//	                                      print docker.WritersOf as JSON
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/preflight-sqlite/preflight/probe/docker"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testprobe sleep|probe|writers ...")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	timeout := fs.Duration("timeout", 5*time.Second, "probe budget")
	volume := fs.String("volume", "", "volume name (writers)")
	hostPath := fs.String("path", "", "host path (writers)")
	fs.Parse(os.Args[2:])
	opts := docker.Options{Timeout: *timeout}
	var res docker.Result
	switch os.Args[1] {
	case "sleep":
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
		<-ch
		return
	case "probe":
		res = docker.Probe(context.Background(), fs.Args(), opts)
	case "writers":
		res = docker.WritersOf(context.Background(), *volume, *hostPath, opts)
	default:
		fmt.Fprintf(os.Stderr, "testprobe: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		fmt.Fprintln(os.Stderr, "testprobe:", err)
		os.Exit(1)
	}
}
