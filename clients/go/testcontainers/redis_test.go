package testcontainers_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	redis "rlockd.dev/rlockd/testcontainers"
)

// The options reach the server as they reach redis-server in the container, and the
// accessors name the free port it listens on.
func TestRunOptionsAndAccessors(t *testing.T) {
	ctx := context.Background()
	c, err := redis.Run(ctx, "docker.io/redis:7",
		redis.WithLogLevel(redis.LogLevelVerbose),
		redis.WithConfigFile(filepath.Join("testdata", "redis7.conf")),
		redis.WithArgs("--redis-version", "8.2.3"))
	redis.CleanupContainer(t, c)
	if err != nil {
		t.Fatal(err)
	}
	srv := c.Server()
	for name, want := range map[string]string{"loglevel": "verbose", "notify-keyspace-events": "AKE", "maxmemory-policy": "allkeys-lru"} {
		got, err := srv.Do("CONFIG", "GET", name)
		if err != nil {
			t.Fatal(err)
		}
		pair := got.([]any)
		if len(pair) != 2 || !strings.EqualFold(sortedFlags(str(pair[1])), sortedFlags(want)) {
			t.Errorf("CONFIG GET %s = %q, want %q", name, got, want)
		}
	}
	info, _ := srv.Do("INFO", "server")
	if !strings.Contains(str(info), "redis_version:8.2.3") {
		t.Errorf("the profile asked for is not answering: %s", info)
	}
	if srv.Port() == 6379 {
		t.Errorf("the config file's port 6379 won over the free port")
	}
	uri, err := c.ConnectionString(ctx)
	if err != nil || uri != "redis://127.0.0.1:"+itoa(srv.Port()) {
		t.Errorf("ConnectionString = %q, %v", uri, err)
	}
	mapped, err := c.MappedPort(ctx, "6379/tcp")
	if err != nil || mapped.Int() != srv.Port() || mapped.Port() != itoa(srv.Port()) {
		t.Errorf("MappedPort = %q, %v", mapped, err)
	}
	if _, err := c.MappedPort(ctx, "6380/tcp"); err == nil {
		t.Error("MappedPort(6380/tcp) found a port that is not exposed")
	}
	host, _ := c.Host(ctx)
	ep, _ := c.Endpoint(ctx, "redis")
	if ep != "redis://"+host+":"+itoa(srv.Port()) || c.Image() != "docker.io/redis:7" {
		t.Errorf("Endpoint = %q, Image = %q", ep, c.Image())
	}
	if err := c.Terminate(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := c.State(ctx); st.Running || st.Status != "exited" {
		t.Errorf("State after Terminate = %+v", st)
	}
	if _, err := c.ConnectionString(ctx); err == nil {
		t.Error("ConnectionString of a terminated container")
	}
}

func TestUnsupportedOptionsFail(t *testing.T) {
	if _, err := redis.Run(context.Background(), "redis:7", redis.WithTLS()); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("WithTLS: err = %v", err)
	}
	var nilContainer *redis.RedisContainer
	if err := nilContainer.Terminate(context.Background()); err != nil {
		t.Errorf("Terminate of nil: %v", err)
	}
}

func sortedFlags(s string) string {
	b := []byte(s)
	for i := range b {
		for j := i + 1; j < len(b); j++ {
			if b[j] < b[i] {
				b[i], b[j] = b[j], b[i]
			}
		}
	}
	return string(b)
}

func itoa(n int) string { return strconv.Itoa(n) }

func str(v any) string {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return fmt.Sprint(v)
}
