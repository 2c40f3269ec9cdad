// Start-to-first-PONG of the Go front end: rlockd.Run() until the first PING is
// answered (through go-redis, and through srv.Do), N times; prints median, p90
// and min in ms, and the first start of this process on its own. Then a cluster of 3
// (rlockd.RunCluster(3)) until go-redis's ClusterClient, which reads CLUSTER SLOTS first,
// answers PING from every node.
//
//	cd clients/bench/go && go run . [N]     # RLOCKD_BINARY, the checkout's build or PATH
package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"rlockd.dev/rlockd"
)

func main() {
	n := 20
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	ctx := context.Background()
	viaClient := func() time.Duration {
		t0 := time.Now()
		srv, err := rlockd.Run()
		if err != nil {
			panic(err)
		}
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		if err := rdb.Ping(ctx).Err(); err != nil {
			panic(err)
		}
		d := time.Since(t0)
		rdb.Close()
		srv.Close()
		return d
	}
	viaDo := func() time.Duration {
		t0 := time.Now()
		srv, err := rlockd.Run()
		if err != nil {
			panic(err)
		}
		if !srv.Ping() {
			panic("no PONG")
		}
		d := time.Since(t0)
		srv.Close()
		return d
	}
	fmt.Printf("go first start-to-PONG in this process (srv.Do): %.1f ms\n", ms(viaDo()))
	var a, b []float64
	for i := 0; i < n; i++ {
		a = append(a, ms(viaClient()))
		b = append(b, ms(viaDo()))
	}
	report("go-redis", a)
	report("srv.Do", b)
	var c []float64
	for i := 0; i < n; i++ {
		t0 := time.Now()
		cl, err := rlockd.RunCluster(3)
		if err != nil {
			panic(err)
		}
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
		if err := rdb.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
			return n.Ping(ctx).Err()
		}); err != nil {
			panic(err)
		}
		c = append(c, ms(time.Since(t0)))
		rdb.Close()
		cl.Close()
	}
	report("a 3-node cluster, go-redis ClusterClient (PING on every node)", c)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func report(via string, v []float64) {
	sort.Float64s(v)
	p90 := v[(len(v)*9+9)/10-1]
	fmt.Printf("go start-to-first-PONG over %d, %s: median %.1f ms, p90 %.1f ms, min %.1f ms\n",
		len(v), via, v[len(v)/2], p90, v[0])
}
