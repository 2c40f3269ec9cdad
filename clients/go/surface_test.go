package rlockd

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// goName is a surface table name in Go's casing: key_slot is KeySlot, replica_urls ReplicaURLs.
func goName(name string) string {
	var b strings.Builder
	for _, part := range strings.Split(name, "_") {
		switch part {
		case "url", "urls", "id":
			b.WriteString(strings.ToUpper(strings.TrimSuffix(part, "s")))
			if strings.HasSuffix(part, "s") {
				b.WriteString("s")
			}
		default:
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// The topology types have every method clients/surface.tsv lists for them.
func TestEveryTopologyTypeHasTheSurfaceTablesMethods(t *testing.T) {
	path := os.Getenv("RLOCKD_SURFACE")
	if path == "" {
		path = "../surface.tsv"
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("no surface table at %s (RLOCKD_SURFACE names it): %v", path, err)
	}
	types := map[string]reflect.Type{"cluster": reflect.TypeOf(&Cluster{}), "replicated": reflect.TypeOf(&Replicated{})}
	var missing []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		for _, kind := range cols[1:] {
			if _, ok := types[kind].MethodByName(goName(cols[0])); !ok {
				missing = append(missing, kind+"."+goName(cols[0]))
			}
		}
	}
	if len(missing) > 0 {
		t.Fatalf("missing from the Go front end: %s", strings.Join(missing, ", "))
	}
}
