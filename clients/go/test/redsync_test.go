package rlockdtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"rlockd.dev/rlockd"
)

func client(t *testing.T, srv *rlockd.Server) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestGoRedisTalksToIt(t *testing.T) {
	srv := rlockd.Start(t, rlockd.Password("secret"))
	ctx := context.Background()
	rdb := client(t, srv)
	if err := rdb.Set(ctx, "k", "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := rdb.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET: %q, %v", v, err)
	}
	if _, err := rdb.Get(ctx, "missing").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("missing key: %v", err)
	}
	// A script through EVALSHA, NOSCRIPT fallback included, as go-redis runs it.
	script := redis.NewScript(`return redis.call("INCRBY", KEYS[1], ARGV[1])`)
	if n, err := script.Run(ctx, rdb, []string{"n"}, 5).Int(); err != nil || n != 5 {
		t.Fatalf("script: %d, %v", n, err)
	}
	if got, err := srv.Do("GET", "n"); err != nil || got != "5" {
		t.Fatalf("seen by the server: %v, %v", got, err)
	}
}

func TestRedsyncLeaseRunsOut(t *testing.T) {
	srv := rlockd.Start(t)
	rs := redsync.New(goredis.NewPool(client(t, srv)))
	mutex := rs.NewMutex("orders", redsync.WithExpiry(30*time.Second), redsync.WithTries(1))
	if err := mutex.Lock(); err != nil {
		t.Fatal(err)
	}
	held := srv.Locks()
	if len(held) != 1 || held[0].Key != "orders" || held[0].Kind != "token" || held[0].Holders[0].ID != mutex.Value() {
		t.Fatalf("locks: %+v", held)
	}
	// A second owner cannot take it while the lease runs.
	other := rs.NewMutex("orders", redsync.WithExpiry(30*time.Second), redsync.WithTries(1))
	var taken *redsync.ErrTaken
	if err := other.Lock(); !errors.As(err, &taken) {
		t.Fatalf("second owner: %v", err)
	}
	srv.AdvanceClock(30 * time.Second) // no sleeping: the lease is over now
	if ok, _ := mutex.Valid(); ok {
		t.Fatal("still valid after its lease")
	}
	if err := other.Lock(); err != nil {
		t.Fatalf("the next owner: %v", err)
	}
	var events []string
	for _, e := range srv.LockEvents("orders", 0) {
		events = append(events, e.Event)
	}
	if got := strings.Join(events, ","); got != "acquired,expired,acquired" {
		t.Fatalf("events %s", got)
	}
	if ok, err := mutex.Unlock(); ok || err == nil {
		t.Fatalf("the expired owner released the new owner's lock: %v, %v", ok, err)
	}
	// The first owner still believes it holds the lock: the server saw two holders at once.
	if v := srv.CheckLocks(); len(v) != 1 || !strings.Contains(v[0], "after its lease expired while held by "+mutex.Value()) {
		t.Fatalf("violations %q", v)
	}
	if ok, err := other.Unlock(); !ok || err != nil {
		t.Fatalf("unlock: %v, %v", ok, err)
	}
}

func TestRedsyncExtendAndFaults(t *testing.T) {
	srv := rlockd.Start(t)
	rs := redsync.New(goredis.NewPool(client(t, srv)))
	mutex := rs.NewMutex("jobs", redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
	if err := mutex.Lock(); err != nil {
		t.Fatal(err)
	}
	srv.AdvanceClock(8 * time.Second)
	if ok, err := mutex.Extend(); !ok || err != nil {
		t.Fatalf("extend: %v, %v", ok, err)
	}
	srv.AdvanceClock(8 * time.Second) // past the first lease, within the extended one
	if ok, err := mutex.Valid(); !ok || err != nil {
		t.Fatalf("valid after extend: %v, %v", ok, err)
	}
	events := srv.LockEvents("jobs", 0)
	if len(events) != 2 || events[1].Event != "renewed" {
		t.Fatalf("events %+v", events)
	}
	// The server refuses the unlock script once: redsync reports the failure, the lock stays.
	srv.AddFault(rlockd.Fault{Kind: rlockd.FaultError, Message: "OOM command not allowed when used memory > 'maxmemory'.",
		Command: "evalsha", Key: "jobs", Times: 1})
	if ok, err := mutex.Unlock(); ok || err == nil || !strings.Contains(err.Error(), "OOM") {
		t.Fatalf("unlock under the fault: %v, %v", ok, err)
	}
	if f := srv.Faults(); len(f) != 0 {
		t.Fatalf("TIMES 1 fault still set: %+v", f)
	}
	if len(srv.Locks("jobs")) != 1 {
		t.Fatal("the refused unlock released the lock")
	}
	// A READONLY reply (a replica promoted under the client) is one go-redis retries on a
	// new connection: once is absorbed, the unlock goes through.
	id := srv.AddFault(rlockd.Fault{Kind: rlockd.FaultError, Message: "READONLY You can't write against a read only replica.",
		Command: "evalsha", Times: 2})
	if ok, err := mutex.Unlock(); !ok || err != nil {
		t.Fatalf("unlock after a retried READONLY: %v, %v", ok, err)
	}
	if f := srv.Faults(); len(f) != 0 {
		t.Fatalf("fault %d not used up by the retries: %+v", id, f)
	}
	if len(srv.Locks("jobs")) != 0 {
		t.Fatal("the lock is still held")
	}
	srv.AssertLocksSafe()
}
