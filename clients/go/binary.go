package rlockd

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// EnvBinary names the environment variable that points at the rlockd executable to run.
const EnvBinary = "RLOCKD_BINARY"

// HowToGet is the line every "binary not found" error ends with.
const HowToGet = "set RLOCKD_BINARY to an rlockd executable or put rlockd on PATH " +
	"(cargo install --path <rlockd checkout>, or /usr/local/bin/rlockd from the rlockd container image)"

// BinaryPath returns the rlockd executable Start runs when no Binary option is given:
// RLOCKD_BINARY, else the release build of the rlockd checkout this module is compiled from
// (under CARGO_TARGET_DIR or the checkout's target/: <host triple>/release, then release; the
// module is used through a replace directive until it is published), else rlockd on PATH.
func BinaryPath() (string, error) {
	return resolve("")
}

func resolve(explicit string) (string, error) {
	if explicit != "" {
		return checked(explicit, "the Binary option")
	}
	if env := os.Getenv(EnvBinary); env != "" {
		return checked(env, "the "+EnvBinary+" environment variable")
	}
	for _, p := range checkoutBuilds() {
		if isExecutableFile(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath("rlockd"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("rlockd binary not found (%s/%s): %s", runtime.GOOS, runtime.GOARCH, HowToGet)
}

// checkoutBuilds lists where the checkout's cargo builds put the binary, from this
// file's own place in the source tree (clients/go/binary.go).
func checkoutBuilds() []string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return nil
	}
	root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	if _, err := os.Stat(filepath.Join(root, "Cargo.toml")); err != nil {
		return nil
	}
	targets := []string{filepath.Join(root, "target")}
	if dir := os.Getenv("CARGO_TARGET_DIR"); dir != "" {
		targets = append([]string{dir}, targets...)
	}
	var out []string
	for _, target := range targets {
		if triple := hostTriple(); triple != "" {
			out = append(out, filepath.Join(target, triple, "release", "rlockd"))
		}
		out = append(out, filepath.Join(target, "release", "rlockd"))
	}
	return out
}

func hostTriple() string {
	switch runtime.GOOS + "/" + runtime.GOARCH {
	case "linux/amd64":
		return "x86_64-unknown-linux-gnu"
	case "linux/arm64":
		return "aarch64-unknown-linux-gnu"
	case "darwin/amd64":
		return "x86_64-apple-darwin"
	case "darwin/arm64":
		return "aarch64-apple-darwin"
	}
	return ""
}

func isExecutableFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// checked refuses a file that is missing or not executable; it never changes its mode.
func checked(p, source string) (string, error) {
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() {
		if err == nil {
			err = errors.New("not a regular file")
		}
		return "", fmt.Errorf("rlockd binary not found: %s (from %s): %v; %s", p, source, err, HowToGet)
	}
	if st.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("rlockd binary is not executable: %s (from %s)", p, source)
	}
	return p, nil
}
