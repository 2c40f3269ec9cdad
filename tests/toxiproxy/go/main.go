// Shopify's Toxiproxy Go client drives rlockd's Toxiproxy API while go-redis
// and redsync observe each fault through the proxy.
//
// Usage: go run . API_PORT RLOCKD_PORT. Prints one line per fault; exits
// non-zero on the first check that fails.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

var ctx = context.Background()

func check(ok bool, format string, args ...any) {
	if !ok {
		fmt.Fprintf(os.Stderr, "check failed: "+format+"\n", args...)
		os.Exit(1)
	}
}

func must(err error, what string) {
	check(err == nil, "%s: %v", what, err)
}

// A client without retries: each fault is seen by the call it hits.
func client(addr string, timeout time.Duration) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr, MaxRetries: -1, ReadTimeout: timeout, WriteTimeout: timeout,
		PoolSize: 1, DisableIdentity: true,
	})
}

func lockCycle(rdb *redis.Client, name string) error {
	rs := redsync.New(goredis.NewPool(rdb))
	m := rs.NewMutex(name, redsync.WithTries(1), redsync.WithExpiry(10*time.Second))
	if err := m.LockContext(ctx); err != nil {
		return err
	}
	ok, err := m.UnlockContext(ctx)
	if err == nil && !ok {
		err = errors.New("unlock: not the holder")
	}
	return err
}

func main() {
	apiPort, nodePort := os.Args[1], os.Args[2]
	api := toxiproxy.NewClient("127.0.0.1:" + apiPort)
	version, err := api.Version()
	must(err, "version")
	check(strings.Contains(string(version), `"version": "2.12.0"`), "version %s", version)
	proxies, err := api.Proxies()
	must(err, "proxies")
	listed := proxies["rlockd-"+nodePort]
	check(listed != nil && listed.Upstream == "127.0.0.1:"+nodePort, "rlockd-%s not listed: %v", nodePort, proxies)

	proxy, err := api.CreateProxy("redis", "127.0.0.1:0", "127.0.0.1:"+nodePort)
	must(err, "create proxy")
	addr := proxy.Listen
	_, err = api.CreateProxy("redis", "127.0.0.1:0", "127.0.0.1:"+nodePort)
	var apiErr *toxiproxy.ApiError
	check(errors.As(err, &apiErr) && apiErr.Status == 409 && apiErr.Message == "proxy already exists", "second create: %v", err)

	// latency: every reply held back 300 ms (downstream).
	rdb := client(addr, 2*time.Second)
	must(lockCycle(rdb, "toxi:lock"), "lock without toxics")
	_, err = proxy.AddToxic("", "latency", "downstream", 1, toxiproxy.Attributes{"latency": 300})
	must(err, "add latency")
	start := time.Now()
	must(lockCycle(rdb, "toxi:lock"), "lock under latency")
	check(time.Since(start) >= 600*time.Millisecond, "lock and unlock took %v", time.Since(start))
	toxic, err := proxy.UpdateToxic("latency_downstream", 1, toxiproxy.Attributes{"latency": 100})
	must(err, "update latency")
	check(toxic.Attributes["latency"] == float64(100) && toxic.Attributes["jitter"] == float64(0), "updated: %v", toxic.Attributes)
	must(proxy.RemoveToxic("latency_downstream"), "remove latency")
	fmt.Println("latency: the lock and unlock replies held back 300 ms each")

	// timeout: no reply passes; the lock call times out.
	rdb.Close()
	rdb = client(addr, 500*time.Millisecond)
	must(rdb.Ping(ctx).Err(), "ping")
	_, err = proxy.AddToxic("t", "timeout", "downstream", 1, toxiproxy.Attributes{"timeout": 0})
	must(err, "add timeout")
	err = lockCycle(rdb, "toxi:t")
	check(err != nil && strings.Contains(err.Error(), "i/o timeout"), "lock under timeout: %v", err)
	must(proxy.RemoveToxic("t"), "remove timeout")
	fmt.Println("timeout: the lock call failed (i/o timeout)")

	// reset_peer: the connection is reset when the reply comes.
	rdb.Close()
	rdb = client(addr, 2*time.Second)
	must(rdb.Ping(ctx).Err(), "ping")
	_, err = proxy.AddToxic("r", "reset_peer", "downstream", 1, toxiproxy.Attributes{"timeout": 0})
	must(err, "add reset_peer")
	err = rdb.Get(ctx, "toxi:lock").Err()
	// go-redis reports the RST as EOF.
	check(err != nil, "get under reset_peer succeeded")
	must(proxy.RemoveToxic("r"), "remove reset_peer")
	fmt.Println("reset_peer: the call failed")

	// slicer: replies cut into 1-byte pieces, 200 µs apart; reassembled.
	rdb.Close()
	rdb = client(addr, 2*time.Second)
	direct := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + nodePort, DisableIdentity: true})
	value := strings.Repeat("v", 2000)
	must(direct.Set(ctx, "toxi:big", value, 0).Err(), "set")
	_, err = proxy.AddToxic("s", "slicer", "downstream", 1, toxiproxy.Attributes{"average_size": 1, "size_variation": 0, "delay": 200})
	must(err, "add slicer")
	start = time.Now()
	got, err := rdb.Get(ctx, "toxi:big").Result()
	check(err == nil && got == value, "get under slicer: %v", err)
	check(time.Since(start) >= 360*time.Millisecond, "2000 pieces in %v", time.Since(start))
	must(lockCycle(rdb, "toxi:lock"), "lock under slicer")
	must(proxy.RemoveToxic("s"), "remove slicer")
	fmt.Println("slicer: a 2000-byte reply arrived in pieces and read whole; the lock works")

	// down: disabled, the lock call fails; enabled again, it works.
	must(proxy.Disable(), "disable")
	err = lockCycle(rdb, "toxi:lock")
	check(err != nil, "lock while down succeeded")
	must(proxy.Enable(), "enable")
	check(proxy.Listen == addr, "listen moved: %s", proxy.Listen)
	// go-redis's pool retries dials in the background, once a second, after
	// refused ones: a new client for the proxy back up.
	rdb.Close()
	rdb = client(addr, 2*time.Second)
	must(lockCycle(rdb, "toxi:lock"), "lock after enable")
	fmt.Println("down: the lock call failed; enabled again, it works")

	// reset: every toxic removed.
	_, err = proxy.AddToxic("bw", "bandwidth", "upstream", 0.5, toxiproxy.Attributes{"rate": 1})
	must(err, "add bandwidth")
	toxics, err := proxy.Toxics()
	must(err, "toxics")
	check(len(toxics) == 1 && toxics[0].Toxicity == 0.5 && toxics[0].Stream == "upstream", "toxics: %+v", toxics)
	must(api.ResetState(), "reset")
	toxics, err = proxy.Toxics()
	must(err, "toxics")
	check(len(toxics) == 0, "toxics after reset: %+v", toxics)
	fmt.Println("reset: every toxic removed")

	must(proxy.Delete(), "delete")
	_, err = api.Proxy("redis")
	check(errors.As(err, &apiErr) && apiErr.Status == 404, "deleted proxy: %v", err)
	fmt.Println("toxiproxy Go client: ok")
}
