package rlockd

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// ClusterReplicas passes --cluster-replicas r to StartCluster (replicas per primary; where
// the binary supports it).
func ClusterReplicas(r int) Option {
	return func(c *config) { c.clusterReplicas = check(c, "ClusterReplicas", r, r >= 0, "a count") }
}

// nodes are the nodes of a topology, and what their test control does over all of them.
type nodes []*Server

// up are the nodes that accept connections (a cluster node taken down does not).
func (ns nodes) up() nodes {
	var out nodes
	for _, n := range ns {
		if n.Ping() {
			out = append(out, n)
		}
	}
	return out
}

func (ns nodes) advanceClock(d time.Duration) int64 {
	var now int64
	for i, n := range ns.up() {
		if t := n.AdvanceClock(d); i == 0 {
			now = t
		}
	}
	return now
}

func (ns nodes) checkLocks() []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range ns.up() {
		for _, v := range n.CheckLocks() {
			if !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	return out
}

func (ns nodes) assertLocksSafe(s *Server) {
	if s.tb != nil {
		s.tb.Helper()
	}
	if v := ns.checkLocks(); len(v) > 0 {
		s.fail("saw %d lock safety violation(s):\n  - %s", len(v), strings.Join(v, "\n  - "))
	}
}

func (ns nodes) resetLockChecks() {
	for _, n := range ns.up() {
		n.ResetLockChecks()
	}
}

func (ns nodes) addrs() []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Addr()
	}
	return out
}

func (ns nodes) urls() []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.URL()
	}
	return out
}

// start runs a topology for tb (stopped by tb.Cleanup, its log in the output of a failed test).
func start(tb testing.TB, nodes, sentinels int, topology []string, opts []Option) *Server {
	tb.Helper()
	s, err := run(nodes, sentinels, topology, opts)
	if err != nil {
		tb.Fatalf("rlockd: %v", err)
	}
	s.tb = tb
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("rlockd log (ports %v, sentinels %v):\n%s", s.ports, s.sentinels, strings.TrimRight(s.Logs(), "\n"))
			s.writeTimeline(tb)
		}
		s.Close()
	})
	return s
}

// ---------------------------------------------------------------- cluster

// Cluster is a Redis Cluster in one rlockd process (rlockd --cluster N), each node on its
// own free port, the slots split as redis-cli --cluster create splits them. Its own methods
// act on the first node, except the clock (AdvanceClock), Locks, CheckLocks, AssertLocksSafe
// and ResetLockChecks, which cover every node that is up; Nodes()[i] has each node's.
type Cluster struct {
	*Server
	nodes nodes
}

// StartCluster starts a cluster of n primaries for test tb, stopped by tb.Cleanup:
//
//	c := rlockd.StartCluster(t, 3)
//	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
func StartCluster(tb testing.TB, n int, opts ...Option) *Cluster {
	tb.Helper()
	nodes, topo := clusterArgs(n, opts)
	return newCluster(start(tb, nodes, 0, topo, opts))
}

// RunCluster starts a cluster outside a test (or for a TestMain); Close stops it.
func RunCluster(n int, opts ...Option) (*Cluster, error) {
	nodes, topo := clusterArgs(n, opts)
	s, err := run(nodes, 0, topo, opts)
	if err != nil {
		return nil, err
	}
	return newCluster(s), nil
}

func clusterArgs(n int, opts []Option) (int, []string) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	topo := []string{"--cluster", strconv.Itoa(n)}
	if c.clusterReplicas > 0 {
		topo = append(topo, "--cluster-replicas", strconv.Itoa(c.clusterReplicas))
	}
	return n * (1 + c.clusterReplicas), topo
}

func newCluster(s *Server) *Cluster {
	cl := &Cluster{Server: s}
	for _, p := range s.ports {
		cl.nodes = append(cl.nodes, s.node(p))
	}
	return cl
}

// Nodes are the cluster's nodes in start order (the index MoveSlot, TakeDown and BringUp take).
func (c *Cluster) Nodes() []*Server { return c.nodes }

// Addrs are the nodes' "127.0.0.1:PORT", as redis.ClusterOptions.Addrs takes them.
func (c *Cluster) Addrs() []string { return c.nodes.addrs() }

// URLs are the nodes' redis:// URLs.
func (c *Cluster) URLs() []string { return c.nodes.urls() }

// via sends RLOCKD args to the first node that is up.
func (c *Cluster) via(args ...any) any {
	if c.tb != nil {
		c.tb.Helper()
	}
	for _, n := range c.nodes {
		if n.Ping() {
			return n.rlockd(args...)
		}
	}
	c.fail("no node of the cluster answers")
	return nil
}

// KeySlot is the key's hash slot (CLUSTER KEYSLOT).
func (c *Cluster) KeySlot(key string) int {
	if c.tb != nil {
		c.tb.Helper()
	}
	r, err := c.up().Do("CLUSTER", "KEYSLOT", key)
	if err != nil {
		c.fail("CLUSTER KEYSLOT: %v", err)
	}
	return int(asInt(r))
}

func (c *Cluster) up() *Server {
	if up := c.nodes.up(); len(up) > 0 {
		return up[0]
	}
	return c.Server
}

// SlotOwner is the index in Nodes() of the node serving slot now (-1: none).
func (c *Cluster) SlotOwner(slot int) int {
	if c.tb != nil {
		c.tb.Helper()
	}
	r, err := c.up().Do("CLUSTER", "SLOTS")
	if err != nil {
		c.fail("CLUSTER SLOTS: %v", err)
	}
	for _, rng := range asList(r) {
		l := asList(rng)
		if int(asInt(l[0])) <= slot && slot <= int(asInt(l[1])) {
			port := int(asInt(asList(l[2])[1]))
			for i, n := range c.nodes {
				if n.port == port {
					return i
				}
			}
		}
	}
	return -1
}

// MoveSlot moves slot with its keys to node (its index in Nodes()): clients get MOVED.
// Returns how many keys moved.
func (c *Cluster) MoveSlot(slot, node int) int64 {
	return asInt(c.via("CLUSTER", "MOVESLOT", slot, node))
}

// MoveSlotKeys moves only keys more keys of slot to node and leaves the slot
// MIGRATING/IMPORTING: clients get ASK, multi-key commands TRYAGAIN.
func (c *Cluster) MoveSlotKeys(slot, node, keys int) int64 {
	return asInt(c.via("CLUSTER", "MOVESLOT", slot, node, "KEYS", keys))
}

// TakeDown stops node: its clients are cut, its port refuses, the others answer
// CLUSTERDOWN.
func (c *Cluster) TakeDown(node int) { c.via("CLUSTER", "DOWN", node) }

// BringUp starts a node taken down again, on its port, with its keys.
func (c *Cluster) BringUp(node int) { c.via("CLUSTER", "UP", node) }

// AdvanceClock moves every node's time by d; returns the first node's new time (unix ms).
func (c *Cluster) AdvanceClock(d time.Duration) int64 { return c.nodes.advanceClock(d) }

// Locks are the locks of every node that is up.
func (c *Cluster) Locks(pattern ...string) []Lock {
	for _, n := range c.nodes.up() {
		return n.Locks(pattern...) // any node answers for the whole cluster
	}
	return nil
}

// CheckLocks lists the violations any node saw.
func (c *Cluster) CheckLocks() []string { return c.nodes.checkLocks() }

// AssertLocksSafe fails the test if any node saw a violation.
func (c *Cluster) AssertLocksSafe() {
	if c.tb != nil {
		c.tb.Helper()
	}
	c.nodes.assertLocksSafe(c.Server)
}

// ResetLockChecks forgets every node's events and violations.
func (c *Cluster) ResetLockChecks() { c.nodes.resetLockChecks() }

func isPrimary(n *Server) bool {
	v, err := n.Do("ROLE")
	return err == nil && asString(asList(v)[0]) == "master"
}

func (c *Cluster) primaries() []*Server {
	var out []*Server
	for _, n := range c.nodes.up() {
		if isPrimary(n) {
			out = append(out, n)
		}
	}
	return out
}

// repl sends RLOCKD REPL args to every primary (no node given), to a primary (node: its
// links) or to a replica's primary (node: that one link); returns the answers.
func (c *Cluster) repl(node []int, args ...any) []any {
	if c.tb != nil {
		c.tb.Helper()
	}
	args = append([]any{"REPL"}, args...)
	targets := c.primaries()
	if len(node) > 0 {
		n := c.nodes[node[0]]
		if isPrimary(n) {
			targets = []*Server{n}
		} else {
			role, err := n.Do("ROLE")
			if err != nil {
				c.fail("ROLE: %v", err)
			}
			port := int(asInt(asList(role)[2]))
			targets = nil
			for _, p := range c.nodes {
				if p.Port() == port {
					targets = []*Server{p}
				}
			}
			args = append(args, n.Port())
		}
	}
	var out []any
	for _, p := range targets {
		out = append(out, p.rlockd(args...))
	}
	return out
}

func (c *Cluster) replSum(node []int, args ...any) int64 {
	var sum int64
	for _, x := range c.repl(node, args...) {
		sum += asInt(x)
	}
	return sum
}

// PauseReplication holds the stream to every primary's replicas (node given: a primary's
// links, or a replica's one link): writes pile up unacknowledged. Returns how many links.
func (c *Cluster) PauseReplication(node ...int) int64 { return c.replSum(node, "PAUSE") }

// ResumeReplication lets the held stream flow again.
func (c *Cluster) ResumeReplication(node ...int) int64 { return c.replSum(node, "RESUME") }

// SetReplicationLag delivers each write d after it was made (0: at once).
func (c *Cluster) SetReplicationLag(d time.Duration, node ...int) int64 {
	return c.replSum(node, "LAG", d.Milliseconds())
}

// DropReplication loses what the replicas have not received yet; returns how many writes.
func (c *Cluster) DropReplication(node ...int) int64 { return c.replSum(node, "DROP") }

// BreakReplication takes the links down (master_link_status:down).
func (c *Cluster) BreakReplication(node ...int) int64 { return c.replSum(node, "BREAK") }

// RestoreReplication brings the links back; the replicas catch up.
func (c *Cluster) RestoreReplication(node ...int) int64 { return c.replSum(node, "RESTORE") }

// ReplicationStatus lists every primary's links.
func (c *Cluster) ReplicationStatus() []ReplicationLink {
	var out []ReplicationLink
	for _, x := range c.repl(nil, "STATUS") {
		out = append(out, replicationLinks(x)...)
	}
	return out
}

// Failover promotes node (a replica; a primary's index names its first replica) at once
// with what it has received (RLOCKD CLUSTER FAILOVER): it takes the slots, its primary
// becomes its replica. Returns the new primary.
func (c *Cluster) Failover(node int) *Server {
	if c.tb != nil {
		c.tb.Helper()
	}
	c.via("CLUSTER", "FAILOVER", node)
	named := c.nodes[node]
	if isPrimary(named) {
		return named
	}
	for _, p := range c.primaries() {
		v, _ := p.Do("ROLE")
		for _, r := range asList(asList(v)[2]) {
			if port, _ := strconv.Atoi(asString(asList(r)[1])); port == named.Port() {
				return p
			}
		}
	}
	c.fail("no node took over from node %d", node)
	return nil
}

// ---------------------------------------------------------------- replicated

// Replicated is a primary with replicas and Sentinels watching it as "mymaster", in one
// rlockd process (rlockd --replicas N --sentinel 0,0,0). Its own methods act on the
// primary as started, except the replication controls (on the current primary), the clock
// (AdvanceClock: every node) and the checks (CheckLocks, AssertLocksSafe,
// ResetLockChecks: every node).
type Replicated struct {
	*Server
	nodes     nodes
	sentinels []string
}

// StartReplicated starts a primary with replicas replicas and sentinels Sentinels for test
// tb, stopped by tb.Cleanup:
//
//	r := rlockd.StartReplicated(t, 1, 3)
//	rdb := redis.NewFailoverClient(&redis.FailoverOptions{
//		MasterName: r.MasterName(), SentinelAddrs: r.SentinelAddrs()})
func StartReplicated(tb testing.TB, replicas, sentinels int, opts ...Option) *Replicated {
	tb.Helper()
	return newReplicated(start(tb, 1+replicas, sentinels, replicatedArgs(replicas, sentinels), opts))
}

// RunReplicated starts a primary with replicas and Sentinels outside a test; Close stops it.
func RunReplicated(replicas, sentinels int, opts ...Option) (*Replicated, error) {
	s, err := run(1+replicas, sentinels, replicatedArgs(replicas, sentinels), opts)
	if err != nil {
		return nil, err
	}
	return newReplicated(s), nil
}

func replicatedArgs(replicas, sentinels int) []string {
	topo := []string{"--replicas", strconv.Itoa(replicas)}
	if sentinels > 0 {
		topo = append(topo, "--sentinel", strings.TrimSuffix(strings.Repeat("0,", sentinels), ","))
	}
	return topo
}

func newReplicated(s *Server) *Replicated {
	r := &Replicated{Server: s}
	for _, p := range s.ports {
		r.nodes = append(r.nodes, s.node(p))
	}
	for _, p := range s.sentinels {
		r.sentinels = append(r.sentinels, s.host+":"+strconv.Itoa(p))
	}
	return r
}

// MasterName is the name the Sentinels watch the primary under ("mymaster").
func (r *Replicated) MasterName() string { return "mymaster" }

// SentinelAddrs are the Sentinels' "127.0.0.1:PORT", as redis.FailoverOptions takes them.
func (r *Replicated) SentinelAddrs() []string { return r.sentinels }

// Primary is the primary as started (CurrentPrimary after a failover).
func (r *Replicated) Primary() *Server { return r.nodes[0] }

// Replicas are the replicas as started.
func (r *Replicated) Replicas() []*Server { return r.nodes[1:] }

// ReplicaURLs are the replicas' redis:// URLs.
func (r *Replicated) ReplicaURLs() []string { return r.nodes[1:].urls() }

// URLs are every node's redis://host:port, the primary as started first.
func (r *Replicated) URLs() []string { return r.nodes.urls() }

func (r *Replicated) viaOther(node int, what string) {
	if r.tb != nil {
		r.tb.Helper()
	}
	target := r.nodes[node]
	for _, n := range r.nodes.up() {
		if n.Port() != target.Port() {
			n.rlockd("REPL", what, target.Port())
			return
		}
	}
	r.fail("no other node answers")
}

// TakeDown crashes node (its index in Nodes(); RLOCKD REPL CRASH): its port closes, its
// clients are cut, what it had not replicated is lost; the Sentinels notice it after
// down-after-milliseconds and fail over from a primary.
func (r *Replicated) TakeDown(node int) { r.viaOther(node, "CRASH") }

// BringUp starts a crashed node again on its port (RLOCKD REPL REVIVE).
func (r *Replicated) BringUp(node int) { r.viaOther(node, "REVIVE") }

// Locks lists the locks on the current primary (the embedded Server's are the primary's as
// started, which a failover leaves behind).
func (r *Replicated) Locks(pattern ...string) []Lock {
	if r.tb != nil {
		r.tb.Helper()
	}
	return r.CurrentPrimary().Locks(pattern...)
}

// Nodes are the primary then its replicas, as started.
func (r *Replicated) Nodes() []*Server { return r.nodes }

// CurrentPrimary is the node that is the primary now (each node's ROLE).
func (r *Replicated) CurrentPrimary() *Server {
	if r.tb != nil {
		r.tb.Helper()
	}
	for _, n := range r.nodes {
		if v, err := n.Do("ROLE"); err == nil && asString(asList(v)[0]) == "master" {
			return n
		}
	}
	r.fail("no node is a primary")
	return nil
}

// SentinelPrimary is where the Sentinels say the primary is ("127.0.0.1:PORT", from
// SENTINEL GET-MASTER-ADDR-BY-NAME).
func (r *Replicated) SentinelPrimary() string {
	if r.tb != nil {
		r.tb.Helper()
	}
	if len(r.sentinels) == 0 {
		r.fail("started without Sentinels")
	}
	st := &Server{process: r.process, host: r.host, port: r.process.sentinels[0], tb: r.tb}
	v, err := st.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", r.MasterName())
	if err != nil {
		r.fail("SENTINEL GET-MASTER-ADDR-BY-NAME: %v", err)
	}
	l := asList(v)
	return asString(l[0]) + ":" + asString(l[1])
}

func (r *Replicated) repl(replica []int, args ...any) int64 {
	if r.tb != nil {
		r.tb.Helper()
	}
	args = append([]any{"REPL"}, args...)
	for _, p := range replica {
		args = append(args, p)
	}
	return asInt(r.CurrentPrimary().rlockd(args...))
}

// PauseReplication holds the stream to the replicas (to the one on port replica, if
// given): writes pile up unacknowledged. Returns how many links.
func (r *Replicated) PauseReplication(replica ...int) int64 { return r.repl(replica, "PAUSE") }

// ResumeReplication lets the held stream flow again.
func (r *Replicated) ResumeReplication(replica ...int) int64 { return r.repl(replica, "RESUME") }

// SetReplicationLag delivers each write d after it was made (0: at once).
func (r *Replicated) SetReplicationLag(d time.Duration, replica ...int) int64 {
	return r.repl(replica, "LAG", d.Milliseconds())
}

// DropReplication loses what the replicas have not received yet, as a crash would;
// returns how many writes were lost.
func (r *Replicated) DropReplication(replica ...int) int64 { return r.repl(replica, "DROP") }

// BreakReplication takes the links down (master_link_status:down).
func (r *Replicated) BreakReplication(replica ...int) int64 { return r.repl(replica, "BREAK") }

// RestoreReplication brings the links back; the replicas catch up.
func (r *Replicated) RestoreReplication(replica ...int) int64 { return r.repl(replica, "RESTORE") }

// ReplicationLink is one link of the current primary (RLOCKD REPL STATUS).
type ReplicationLink struct {
	Primary, Replica string // host:port
	Acked            int64  // the replica's acknowledged offset
	PendingWrites    int64
	PendingBytes     int64
	Paused           bool
	LagMs            int64
	Broken           bool
}

// ReplicationStatus lists the current primary's links.
func (r *Replicated) ReplicationStatus() []ReplicationLink {
	if r.tb != nil {
		r.tb.Helper()
	}
	return replicationLinks(r.CurrentPrimary().rlockd("REPL", "STATUS"))
}

func replicationLinks(reply any) []ReplicationLink {
	var out []ReplicationLink
	for _, x := range asList(reply) {
		m := asMap(x)
		out = append(out, ReplicationLink{Primary: asString(m["primary"]), Replica: asString(m["replica"]),
			Acked: asInt(m["acked"]), PendingWrites: asInt(m["pending_writes"]),
			PendingBytes: asInt(m["pending_bytes"]), Paused: asInt(m["paused"]) != 0,
			LagMs: asInt(m["lag_ms"]), Broken: asInt(m["broken"]) != 0})
	}
	return out
}

// Failover promotes a replica (the one on port replica, else the first) with what it has
// received now; the old primary becomes its replica and the Sentinels announce
// +switch-master. Returns the new primary once it is done and the Sentinels name it.
func (r *Replicated) Failover(replica ...int) *Server {
	if r.tb != nil {
		r.tb.Helper()
	}
	args := []any{"REPL", "FAILOVER"}
	for _, p := range replica {
		args = append(args, p)
	}
	r.CurrentPrimary().rlockd(args...)
	p := r.CurrentPrimary()
	deadline := time.Now().Add(10 * time.Second) // the Sentinels look every 20 ms
	for len(r.sentinels) > 0 && r.SentinelPrimary() != p.Addr() {
		if time.Now().After(deadline) {
			r.fail("the Sentinels still name %s, not %s", r.SentinelPrimary(), p.Addr())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return p
}

// AdvanceClock moves every node's time by d; returns the primary's new time (unix ms).
func (r *Replicated) AdvanceClock(d time.Duration) int64 { return r.nodes.advanceClock(d) }

// CheckLocks lists the violations any node saw.
func (r *Replicated) CheckLocks() []string { return r.nodes.checkLocks() }

// AssertLocksSafe fails the test if any node saw a violation.
func (r *Replicated) AssertLocksSafe() {
	if r.tb != nil {
		r.tb.Helper()
	}
	r.nodes.assertLocksSafe(r.Server)
}

// ResetLockChecks forgets every node's events and violations.
func (r *Replicated) ResetLockChecks() { r.nodes.resetLockChecks() }
