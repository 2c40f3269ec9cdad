package testcontainers_test

// testcontainers-go's documented Redis usage example (modules/redis/examples_test.go,
// ExampleRun, the block its Redis page includes), unchanged but for the import line:
// "github.com/testcontainers/testcontainers-go/modules/redis" became
// redis "rlockd.dev/rlockd/testcontainers". go test checks its Output.

import (
	"context"
	"fmt"
	"log"
	"path/filepath"

	redis "rlockd.dev/rlockd/testcontainers"
)

func ExampleRun() {
	// runRedisContainer {
	ctx := context.Background()

	redisContainer, err := redis.Run(ctx,
		"docker.io/redis:7",
		redis.WithSnapshotting(10, 1),
		redis.WithLogLevel(redis.LogLevelVerbose),
		redis.WithConfigFile(filepath.Join("testdata", "redis7.conf")),
	)
	if err != nil {
		log.Fatalf("failed to start container: %s", err)
	}

	// Clean up the container
	defer func() {
		if err := redisContainer.Terminate(ctx); err != nil {
			log.Fatalf("failed to terminate container: %s", err)
		}
	}()
	// }

	state, err := redisContainer.State(ctx)
	if err != nil {
		log.Fatalf("failed to get container state: %s", err) // nolint:gocritic
	}

	fmt.Println(state.Running)

	// Output:
	// true
}
