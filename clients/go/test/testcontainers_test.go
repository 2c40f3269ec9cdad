package rlockdtest

// testcontainers-go's Redis module test flow (modules/redis/redis_test.go: Run, Terminate in
// t.Cleanup, then its assertSetsGets helper with the documented "connectionString" block),
// with rlockd.dev/rlockd/testcontainers imported as tcredis in place of the module, and
// go-redis v9 (the module's test uses v8, with testify and uuid, which this module does not
// carry: the helper checks with t.Fatal and a counter instead).

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	tcredis "rlockd.dev/rlockd/testcontainers"
)

func TestTestcontainersSetGet(t *testing.T) {
	ctx := context.Background()

	redisContainer, err := tcredis.Run(ctx, "docker.io/redis:7")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := redisContainer.Terminate(ctx); err != nil {
			t.Fatalf("failed to terminate container: %s", err)
		}
	})

	assertSetsGets(t, ctx, redisContainer, 10)
}

func TestTestcontainersWithLogLevel(t *testing.T) {
	ctx := context.Background()

	redisContainer, err := tcredis.Run(ctx, "docker.io/redis:7", tcredis.WithLogLevel(tcredis.LogLevelVerbose))
	tcredis.CleanupContainer(t, redisContainer)
	if err != nil {
		t.Fatal(err)
	}

	assertSetsGets(t, ctx, redisContainer, 1)
}

// A redsync mutex against the container, as a lock test would use it.
func TestTestcontainersRedsync(t *testing.T) {
	ctx := context.Background()
	redisContainer, err := tcredis.Run(ctx, "redis:7-alpine")
	tcredis.CleanupContainer(t, redisContainer)
	if err != nil {
		t.Fatal(err)
	}
	uri, err := redisContainer.ConnectionString(ctx)
	if err != nil {
		t.Fatal(err)
	}
	opts, _ := redis.ParseURL(uri)
	client := redis.NewClient(opts)
	defer client.Close()
	rs := redsync.New(goredis.NewPool(client))
	m := rs.NewMutex("orders", redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
	if err := m.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	if other := rs.NewMutex("orders", redsync.WithTries(1)); other.LockContext(ctx) == nil {
		t.Fatal("a second holder took the held mutex")
	}
	if locks := redisContainer.Server().Locks("orders"); len(locks) != 1 {
		t.Fatalf("the server sees %d locks on orders, want 1", len(locks))
	}
	if ok, err := m.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("unlock: %v %v", ok, err)
	}
}

func assertSetsGets(t *testing.T, ctx context.Context, redisContainer *tcredis.RedisContainer, keyCount int) {
	// connectionString {
	uri, err := redisContainer.ConnectionString(ctx)
	// }
	if err != nil {
		t.Fatal(err)
	}

	options, err := redis.ParseURL(uri)
	if err != nil {
		t.Fatal(err)
	}

	client := redis.NewClient(options)
	defer func() {
		if err := client.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}()

	pong, err := client.Ping(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if pong != "PONG" {
		t.Fatalf("received unexpected response from redis: %s", pong)
	}

	for i := 0; i < keyCount; i++ {
		key := fmt.Sprintf("{user.%d.%d}.favoritefood.%d", time.Now().UnixNano(), i, i)
		value := fmt.Sprintf("Cabbage Biscuits %d", i)

		ttl, _ := time.ParseDuration("2h")
		if err := client.Set(ctx, key, value, ttl).Err(); err != nil {
			t.Fatal(err)
		}

		savedValue, err := client.Get(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if savedValue != value {
			t.Fatalf("Expected value %s. Got %s.", savedValue, value)
		}
	}
	if n, _ := client.DBSize(ctx).Result(); n != int64(keyCount) {
		t.Fatalf("DBSIZE = %d, want %d", n, keyCount)
	}
}
