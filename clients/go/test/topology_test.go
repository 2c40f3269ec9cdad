package rlockdtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"rlockd.dev/rlockd"
)

func TestClusterClientFollowsAMovedSlot(t *testing.T) {
	c := rlockd.StartCluster(t, 3)
	if len(c.Nodes()) != 3 || len(c.Addrs()) != 3 {
		t.Fatalf("nodes: %v", c.Addrs())
	}
	ctx := context.Background()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer rdb.Close()
	mutex := redsync.New(goredis.NewPool(rdb)).NewMutex("orders", redsync.WithExpiry(30*time.Second))
	if err := mutex.Lock(); err != nil {
		t.Fatal(err)
	}
	slot := c.KeySlot("orders")
	owner := c.SlotOwner(slot)
	to := (owner + 1) % 3
	if n := c.MoveSlot(slot, to); n != 1 {
		t.Fatalf("moved %d keys", n)
	}
	if c.SlotOwner(slot) != to {
		t.Fatal("the slot did not move")
	}
	if v, err := rdb.Get(ctx, "orders").Result(); err != nil || v != mutex.Value() { // followed MOVED
		t.Fatalf("GET: %q, %v", v, err)
	}
	if held := c.Locks(); len(held) != 1 || held[0].Holders[0].ID != mutex.Value() {
		t.Fatalf("locks: %+v", held)
	}
	c.AdvanceClock(30 * time.Second)
	if n, _ := rdb.Exists(ctx, "orders").Result(); n != 0 {
		t.Fatal("the lock outlived its lease")
	}
	c.AssertLocksSafe()
}

func TestClusterNodeDownAndUp(t *testing.T) {
	c := rlockd.StartCluster(t, 3)
	slot := c.KeySlot("k")
	owner := c.SlotOwner(slot)
	other := c.Nodes()[(owner+1)%3]
	if _, err := c.Nodes()[owner].Do("SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	c.TakeDown(owner)
	if c.Nodes()[owner].Ping() {
		t.Fatal("a node taken down still answers")
	}
	if _, err := other.Do("GET", "k"); err == nil || !strings.HasPrefix(err.Error(), "CLUSTERDOWN") {
		t.Fatalf("GET on another node: %v", err)
	}
	c.BringUp(owner)
	if v, err := c.Nodes()[owner].Do("GET", "k"); err != nil || v != "v" {
		t.Fatalf("GET after UP: %v, %v", v, err)
	}
}

func TestFailoverClientLosesTheLockInAFailover(t *testing.T) {
	r := rlockd.StartReplicated(t, 1, 3)
	if len(r.SentinelAddrs()) != 3 || len(r.Replicas()) != 1 || r.MasterName() != "mymaster" {
		t.Fatalf("sentinels %v, replicas %v", r.SentinelAddrs(), r.ReplicaURLs())
	}
	ctx := context.Background()
	failover := func() *redis.Client {
		c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: r.MasterName(), SentinelAddrs: r.SentinelAddrs()})
		t.Cleanup(func() { c.Close() })
		return c
	}
	a := failover()
	if r.PauseReplication() != 1 { // the lock will not reach the replica
		t.Fatal("no link paused")
	}
	first := redsync.New(goredis.NewPool(a)).NewMutex("order:42", redsync.WithExpiry(30*time.Second), redsync.WithTries(1))
	if err := first.Lock(); err != nil {
		t.Fatal(err)
	}
	if st := r.ReplicationStatus(); len(st) != 1 || !st[0].Paused || st[0].PendingWrites < 1 {
		t.Fatalf("status: %+v", st)
	}
	if p := r.Failover(); p.Port() != r.Replicas()[0].Port() {
		t.Fatalf("new primary %v", p)
	}
	b := failover()
	second := redsync.New(goredis.NewPool(b)).NewMutex("order:42", redsync.WithExpiry(30*time.Second), redsync.WithTries(1))
	if err := second.Lock(); err != nil { // a second holder: the replica never had the lock
		t.Fatalf("second lock: %v", err)
	}
	if v := r.CheckLocks(); len(v) == 0 || !strings.Contains(strings.Join(v, "\n"), "order:42") {
		t.Fatalf("violations: %v", v)
	}
	if _, err := b.Set(ctx, "after", "1", 0).Result(); err != nil {
		t.Fatal(err)
	}
}

func TestClusterReplicasArePassedToTheBinary(t *testing.T) {
	c, err := rlockd.RunCluster(2, rlockd.ClusterReplicas(1))
	if err != nil { // a binary without cluster replicas says so in its log
		_, log, _ := strings.Cut(err.Error(), "--- rlockd log ---")
		if !strings.Contains(log, "cluster-replicas") {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	defer c.Close()
	roles := map[string]int{}
	for _, n := range c.Nodes() {
		r, err := n.Do("ROLE")
		if err != nil {
			t.Fatal(err)
		}
		roles[r.([]any)[0].(string)]++
	}
	if len(c.Nodes()) != 4 || roles["master"] != 2 || roles["slave"] != 2 {
		t.Fatalf("nodes %v, roles %v", c.Addrs(), roles)
	}
}
