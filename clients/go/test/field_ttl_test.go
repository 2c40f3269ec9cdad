package rlockdtest

import (
	"context"
	"testing"
	"time"

	"rlockd.dev/rlockd"
)

// go-redis's hash-field expiration commands (Redis 7.4) against rlockd
// answering as Redis 8.2.3: a field's TTL set, read and cleared, then a
// field expired by the server's clock.
func TestGoRedisHashFieldTTL(t *testing.T) {
	srv := rlockd.Start(t, rlockd.Args("--redis-version", "8.2.3"))
	ctx := context.Background()
	rdb := client(t, srv)
	if err := rdb.HSet(ctx, "session", "token", "t1", "user", "ada").Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := rdb.HExpire(ctx, "session", time.Minute, "token").Result(); err != nil || len(got) != 1 || got[0] != 1 {
		t.Fatalf("HEXPIRE: %v, %v", got, err)
	}
	if got, err := rdb.HTTL(ctx, "session", "token", "user", "nope").Result(); err != nil || len(got) != 3 ||
		got[0] <= 0 || got[0] > 60 || got[1] != -1 || got[2] != -2 {
		t.Fatalf("HTTL: %v, %v", got, err)
	}
	if got, err := rdb.HPersist(ctx, "session", "token").Result(); err != nil || len(got) != 1 || got[0] != 1 {
		t.Fatalf("HPERSIST: %v, %v", got, err)
	}
	if got, err := rdb.HPExpire(ctx, "session", time.Second, "token").Result(); err != nil || got[0] != 1 {
		t.Fatalf("HPEXPIRE: %v, %v", got, err)
	}
	srv.AdvanceClock(1500 * time.Millisecond)
	if got, err := rdb.HGetAll(ctx, "session").Result(); err != nil || len(got) != 1 || got["user"] != "ada" {
		t.Fatalf("HGETALL after the field expired: %v, %v", got, err)
	}
}
