// Command check reads a lock history (RLOCKD HISTORY's JSON, or any history in Jepsen's
// format with the same fs) and checks it with Porcupine against a lease lock: it prints the
// verdict and writes Porcupine's HTML visualisation.
//
//	go run ./cmd/check [-html out.html] [-timeout 1m] history.json
//
// Exit status: 0 linearizable, 1 a violation, 2 a malformed history (or unreadable file),
// 3 the check timed out.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"rlockd.dev/rlockd/check"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	html := fs.String("html", "", "where to write the visualisation (default: the history's name with .html)")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long (0: no limit)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: check [-html out.html] [-timeout 1m] history.json")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	path := fs.Arg(0)
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	entries, err := check.Read(f)
	f.Close()
	if err != nil {
		fmt.Printf("%s: %v\n", path, err)
		return 2
	}
	ops, err := check.Pair(entries)
	if err != nil {
		fmt.Printf("%s: %v\n", path, err)
		return 2
	}
	start := time.Now()
	v := check.Check(ops, *timeout)
	took := time.Since(start)
	out := *html
	if out == "" {
		out = strings.TrimSuffix(path, ".json") + ".html"
	}
	hf, err := os.Create(out)
	if err == nil {
		err = v.Visualize(hf)
		if cerr := hf.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "the visualisation: %v\n", err)
		return 2
	}
	what := fmt.Sprintf("%d operations on %d locks", v.Ops, v.Locks)
	if v.Skipped > 0 {
		what += fmt.Sprintf(", %d on locks of several holders skipped", v.Skipped)
	}
	switch v.Result {
	case porcupine.Ok:
		fmt.Printf("ok: linearizable as a lease lock (%s) in %v; visualisation: %s\n", what, took.Round(time.Millisecond), out)
		return 0
	case porcupine.Illegal:
		fmt.Printf("violation: not linearizable as a lease lock (%s); first refused in history order: %s; visualisation: %s\n", what, v.First, out)
		return 1
	default:
		fmt.Printf("unknown: the check timed out after %v (%s); visualisation: %s\n", *timeout, what, out)
		return 3
	}
}
