package rlockd

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStartServesAndStopsAtCleanup(t *testing.T) {
	var srv *Server
	t.Run("inner", func(t *testing.T) {
		srv = Start(t)
		if !srv.Ping() {
			t.Fatal("no PONG")
		}
		if want := "redis://127.0.0.1:"; !strings.HasPrefix(srv.URL(), want) {
			t.Fatalf("URL %q", srv.URL())
		}
		if srv.Port() <= 0 || srv.Addr() != srv.Host()+":"+itoa(srv.Port()) {
			t.Fatalf("addr %q port %d", srv.Addr(), srv.Port())
		}
	})
	if srv == nil {
		t.Fatal("no server was started")
	}
	if srv.Running() {
		t.Fatal("still running after the subtest's cleanup")
	}
	if err := syscall.Kill(srv.PID(), 0); err == nil {
		t.Fatalf("process %d still there", srv.PID())
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestDoDecodesReplies(t *testing.T) {
	srv := Start(t, Password("p@ss word"))
	if !strings.HasPrefix(srv.URL(), "redis://:p%40ss%20word@127.0.0.1:") {
		t.Fatalf("URL %q", srv.URL())
	}
	for _, c := range []struct {
		args []any
		want any
	}{
		{[]any{"SET", "k", "v"}, "OK"},
		{[]any{"GET", "k"}, "v"},
		{[]any{"GET", "missing"}, nil},
		{[]any{"INCRBY", "n", 5}, int64(5)},
	} {
		got, err := srv.Do(c.args...)
		if err != nil || got != c.want {
			t.Fatalf("%v: got %#v, %v; want %#v", c.args, got, err, c.want)
		}
	}
	got, err := srv.Do("MGET", "k", "missing")
	if l, ok := got.([]any); err != nil || !ok || len(l) != 2 || l[0] != "v" || l[1] != nil {
		t.Fatalf("MGET: %#v, %v", got, err)
	}
	_, err = srv.Do("INCR", "k")
	var er *ErrorReply
	if !errors.As(err, &er) || er.Message != "ERR value is not an integer or out of range" {
		t.Fatalf("INCR on a string: %v", err)
	}
}

func TestBinaryChoiceAndErrors(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "rlockd")
	if err := os.WriteFile(text, []byte("echo this is not rlockd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Run(Binary(text))
	if err == nil || !strings.Contains(err.Error(), "not executable: "+text+" (from the Binary option)") {
		t.Fatalf("non-executable Binary: %v", err)
	}
	t.Setenv(EnvBinary, text)
	_, err = Run()
	if err == nil || !strings.Contains(err.Error(), "not executable: "+text+" (from the RLOCKD_BINARY environment variable)") {
		t.Fatalf("non-executable RLOCKD_BINARY: %v", err)
	}
	if st, _ := os.Stat(text); st.Mode().Perm() != 0o644 {
		t.Fatalf("mode changed to %v", st.Mode())
	}
	missing := filepath.Join(dir, "none", "rlockd")
	t.Setenv(EnvBinary, missing)
	_, err = Run()
	if err == nil || !strings.Contains(err.Error(), "rlockd binary not found: "+missing) || !strings.Contains(err.Error(), HowToGet) {
		t.Fatalf("missing RLOCKD_BINARY: %v", err)
	}
}

func TestBadArgumentReportsTheLog(t *testing.T) {
	_, err := Run(Args("--no-such-option"))
	if err == nil || !strings.Contains(err.Error(), "exited with") || !strings.Contains(err.Error(), "--- rlockd log ---") {
		t.Fatalf("bad argument: %v", err)
	}
	first := Start(t)
	_, err = Run(Port(first.Port()))
	if err == nil || !strings.Contains(err.Error(), "already in use") {
		t.Fatalf("taken port: %v", err)
	}
}

// recorder is a testing.TB whose failures and logs are kept, for the cleanup's behaviour.
type recorder struct {
	testing.TB
	failed   bool
	logs     []string
	cleanups []func()
}

func (r *recorder) Helper()                 {}
func (r *recorder) Failed() bool            { return r.failed }
func (r *recorder) Cleanup(f func())        { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Logf(f string, a ...any) { r.logs = append(r.logs, fmt.Sprintf(f, a...)) }
func (r *recorder) Fatalf(f string, a ...any) {
	r.failed = true
	r.logs = append(r.logs, fmt.Sprintf(f, a...))
}
func (r *recorder) Errorf(f string, a ...any) { r.Fatalf(f, a...) }
func (r *recorder) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestAFailedTestGetsTheServerLog(t *testing.T) {
	t.Setenv("RLOCKD_ARTIFACTS", t.TempDir()) // the failures are on purpose
	for _, fail := range []bool{false, true} {
		rec := &recorder{TB: t}
		srv := Start(rec)
		srv.Do("SET", "k", "v")
		rec.failed = fail
		rec.runCleanups()
		joined := strings.Join(rec.logs, "\n")
		if fail != strings.Contains(joined, "rlockd log (port "+itoa(srv.Port())+")") {
			t.Fatalf("failed=%v, logs: %q", fail, joined)
		}
		if fail && !strings.Contains(joined, "ready to accept connections") {
			t.Fatalf("log without the ready line: %q", joined)
		}
		if srv.Running() {
			t.Fatal("not stopped")
		}
	}
}

func TestControlErrorsFailTheTest(t *testing.T) {
	t.Setenv("RLOCKD_ARTIFACTS", t.TempDir()) // the failures are on purpose
	rec := &recorder{TB: t}
	srv := Start(rec)
	defer rec.runCleanups()
	func() {
		defer func() { _ = recover() }()
		srv.Restore("no-such-snapshot")
	}()
	if !rec.failed || !strings.Contains(strings.Join(rec.logs, "\n"), "RLOCKD RESTORE no-such-snapshot") {
		t.Fatalf("an error reply did not fail the test: %q", rec.logs)
	}
}

func TestClockLocksEventsAndChecks(t *testing.T) {
	srv := Start(t)
	srv.FreezeClock()
	info := srv.ClockInfo()
	if !info.Frozen {
		t.Fatalf("not frozen: %+v", info)
	}
	now := srv.ClockMs()
	if got := srv.AdvanceClock(1500 * time.Millisecond); got != now+1500 {
		t.Fatalf("advance: %d, want %d", got, now+1500)
	}
	if got := srv.SetClock(1767225600000); got != 1767225600000 {
		t.Fatalf("set: %d", got)
	}
	if !srv.Clock().Equal(time.UnixMilli(1767225600000)) {
		t.Fatalf("clock %v", srv.Clock())
	}
	srv.ResumeClock()
	if srv.ClockInfo().Frozen {
		t.Fatal("still frozen")
	}
	srv.SkewClock(0)

	if _, err := srv.Do("SET", "lock:a", "token-1", "PX", 10000, "NX"); err != nil {
		t.Fatal(err)
	}
	locks := srv.Locks("lock:*")
	if len(locks) != 1 || locks[0].Key != "lock:a" || locks[0].Kind != "token" || len(locks[0].Holders) != 1 ||
		locks[0].Holders[0].ID != "token-1" || locks[0].LeaseMs == nil || *locks[0].LeaseMs > 10000 {
		t.Fatalf("locks: %+v", locks)
	}
	if len(srv.Locks("other:*")) != 0 {
		t.Fatal("pattern ignored")
	}
	if txt := srv.LocksText(); !strings.Contains(txt, "lock:a") {
		t.Fatalf("text: %q", txt)
	}
	srv.AdvanceClock(10 * time.Second)
	if n, _ := srv.Do("EXISTS", "lock:a"); n != int64(0) {
		t.Fatal("the lease did not run out")
	}
	ev := srv.LockEvents("lock:a", 0)
	if len(ev) != 2 || ev[0].Event != "acquired" || ev[1].Event != "expired" || ev[0].Holder != "token-1" {
		t.Fatalf("events: %+v", ev)
	}
	if later := srv.LockEvents("", ev[0].ID); len(later) != 1 || later[0].Event != "expired" {
		t.Fatalf("since: %+v", later)
	}
	if v := srv.CheckLocks(); len(v) != 0 {
		t.Fatalf("violations: %v", v)
	}
	srv.AssertLocksSafe()
	srv.ResetLockChecks()
	if len(srv.LockEvents("", 0)) != 0 {
		t.Fatal("events kept after reset")
	}
}

func TestSnapshotsAndFaults(t *testing.T) {
	srv := Start(t)
	srv.Do("SET", "k", "before")
	srv.Snapshot("s1")
	srv.Do("SET", "k", "after")
	srv.Restore("s1")
	if v, _ := srv.Do("GET", "k"); v != "before" {
		t.Fatalf("restored %v", v)
	}
	if s := srv.Snapshots(); len(s) != 1 || s[0] != "s1" {
		t.Fatalf("snapshots %v", s)
	}

	id := srv.AddFault(Fault{Kind: FaultError, Message: "READONLY You can't write against a read only replica.",
		Command: "set", Times: 1})
	_, err := srv.Do("SET", "k", "x")
	var er *ErrorReply
	if !errors.As(err, &er) || !strings.HasPrefix(er.Message, "READONLY") {
		t.Fatalf("injected error: %v", err)
	}
	if _, err := srv.Do("SET", "k", "x"); err != nil {
		t.Fatalf("TIMES 1 not honoured: %v", err)
	}
	lat := srv.AddFault(Fault{Kind: FaultLatency, Ms: 50, Jitter: 10, Command: "get", Key: "k*"})
	faults := srv.Faults()
	if len(faults) != 1 || faults[0].ID != lat || faults[0].Kind != "latency" || faults[0].Command != "get" ||
		faults[0].Key != "k*" || faults[0].TimesLeft != nil || lat == id {
		t.Fatalf("faults %+v", faults)
	}
	if n := srv.ClearFault(lat); n != 1 {
		t.Fatalf("clear %d", n)
	}
	srv.AddFault(Fault{Kind: FaultClose, When: "before", Command: "get"})
	srv.AddFault(Fault{Kind: FaultDropMsg, Channel: "x:*"})
	if n := srv.ClearFaults(); n != 2 {
		t.Fatalf("clear all %d", n)
	}
	if n := srv.KillClients("nobody-*"); n != 0 {
		t.Fatalf("kill %d", n)
	}
	rec := &recorder{TB: t}
	func() {
		defer func() { _ = recover() }()
		bad := &Server{tb: rec}
		bad.AddFault(Fault{Kind: "nope"})
	}()
	if !rec.failed || !strings.Contains(strings.Join(rec.logs, ""), `unknown fault kind "nope"`) {
		t.Fatalf("unknown kind: %q", rec.logs)
	}
}

func TestClusterReplicationAndFailoverControls(t *testing.T) {
	c := StartCluster(t, 3, ClusterReplicas(1))
	slot := c.KeySlot("orders")
	owner := c.SlotOwner(slot)
	primary := c.Nodes()[owner]
	if n := c.PauseReplication(owner); n != 1 {
		t.Fatalf("paused %d links", n)
	}
	if v, err := primary.Do("SET", "orders", "client-1", "NX", "PX", 30000); err != nil || v != "OK" {
		t.Fatalf("SET: %v %v", v, err)
	}
	paused := 0
	for _, l := range c.ReplicationStatus() {
		if l.Paused {
			paused++
		}
	}
	if paused != 1 {
		t.Fatalf("%d links paused: %+v", paused, c.ReplicationStatus())
	}
	next := c.Failover(owner) // its replica takes the slots without the lock
	if next.Port() == primary.Port() || c.Nodes()[c.SlotOwner(slot)].Port() != next.Port() {
		t.Fatalf("failover: new primary %d, slot owner %d", next.Port(), c.SlotOwner(slot))
	}
	if v, err := next.Do("SET", "orders", "client-2", "NX", "PX", 30000); err != nil || v != "OK" {
		t.Fatalf("second SET: %v %v", v, err)
	}
	if len(c.CheckLocks()) == 0 {
		t.Fatal("the two holders went unreported")
	}
	for name, n := range map[string]int64{
		"lag": c.SetReplicationLag(0), "resume": c.ResumeReplication(),
		"break": c.BreakReplication(), "restore": c.RestoreReplication(),
	} {
		if n != 3 {
			t.Fatalf("%s: %d links", name, n)
		}
	}
}

func TestWrongOptionValuesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		opt  Option
		want string
	}{
		{Port(70000), "option Port takes a port from 0 to 65535, not 70000 (options: Port, Password, Args, Binary, StartupTimeout, ClusterReplicas)"},
		{StartupTimeout(0), "option StartupTimeout takes a positive duration, not 0s"},
		{ClusterReplicas(-1), "option ClusterReplicas takes a count, not -1"},
	} {
		s, err := Run(tc.opt)
		if err == nil {
			s.Close()
			t.Fatalf("started with a wrong option; want %q", tc.want)
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("error %q, want %q on one line", err, tc.want)
		}
	}
}

func TestAFaultFieldItsKindDoesNotTakeIsRefused(t *testing.T) {
	_, err := Fault{Kind: FaultLatency, Ms: 200, Message: "LOADING"}.args()
	want := `rlockd.Fault{Kind: "latency"} does not take Message; it takes Ms, Jitter, Command, Key, Client, ClientID, Channel, Times`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
	if _, err := (Fault{Kind: FaultSlowWrite, Bytes: 10, Ms: 20, Command: "get", Times: 1}).args(); err != nil {
		t.Fatal(err)
	}
}

func TestAReplicatedNodeTakenDownAndBroughtUp(t *testing.T) {
	r := StartReplicated(t, 1, 1)
	r.TakeDown(1) // the replica crashes: its port closes
	if r.Replicas()[0].Ping() {
		t.Fatal("the replica still answers")
	}
	r.BringUp(1)
	if !r.Replicas()[0].Ping() {
		t.Fatal("the replica did not come back")
	}
}

func TestAClaimPastItsLeaseIsAViolationAndDrawn(t *testing.T) {
	srv := Start(t)
	srv.FreezeClock()
	if r, err := srv.Do("SET", "orders", "tok-a", "NX", "PX", 30000); err != nil || r != "OK" {
		t.Fatalf("SET: %v %v", r, err)
	}
	leave := srv.Claim("orders", "tok-a")
	srv.AdvanceClock(31 * time.Second) // paused past its lease
	if r, err := srv.Do("SET", "orders", "tok-b", "NX", "PX", 30000); err != nil || r != "OK" {
		t.Fatalf("second SET: %v %v", r, err)
	}
	leave()
	joined := strings.Join(srv.CheckLocks(), "\n")
	for _, want := range []string{"outlived its lease", "overlaps a grant to tok-b"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("no %q in %q", want, joined)
		}
	}
	path := filepath.Join(t.TempDir(), "t.html")
	doc := srv.Timeline(path)
	if b, err := os.ReadFile(path); err != nil || string(b) != doc {
		t.Fatalf("written: %v", err)
	}
	for _, want := range []string{`class="lane" data-lock="orders"`, `data-end="expired"`, `<rect class="claim"`, `<g class="violation"`} {
		if !strings.Contains(doc, want) {
			t.Fatalf("no %s in the timeline", want)
		}
	}
	if j := srv.TimelineJSON("ord*"); !strings.Contains(j, `"end":"expired"`) {
		t.Fatalf("json: %s", j)
	}
}

// The history's operations have Jepsen's keys and rlockd's mapping: each an invocation and its
// completion, the expiry the nemesis's, a refused acquire failed.
func TestTheHistoryIsJepsenOperations(t *testing.T) {
	srv := Start(t)
	srv.FreezeClock()
	srv.Do("SET", "orders", "tok-a", "NX", "PX", 30000)
	leave := srv.Claim("orders", "tok-a")
	srv.Do("SET", "orders", "tok-b", "NX", "PX", 30000) // refused
	srv.AdvanceClock(31 * time.Second)
	srv.Do("SET", "orders", "tok-b", "NX", "PX", 30000)
	leave()
	srv.Do("SET", "other", "x", "NX")
	path := filepath.Join(t.TempDir(), "history.json")
	doc := srv.History(path, "ord*")
	if b, err := os.ReadFile(path); err != nil || string(b) != doc {
		t.Fatalf("written: %v", err)
	}
	type value struct {
		Key, Holder, Kind string
		DB, Count         int64
		Deadline          *int64
	}
	var ops []struct {
		Index   int64
		Time    int64
		Type    string
		Process any
		F       string
		Value   value
		UnixMs  int64 `json:"unix_ms"`
		Client  int64
		Command string
	}
	if err := json.Unmarshal([]byte(doc), &ops); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	var got []string
	for i, o := range ops {
		if o.Index != int64(i) || o.Value.Key != "orders" || o.UnixMs == 0 {
			t.Fatalf("entry %d: %+v", i, o)
		}
		got = append(got, fmt.Sprintf("%s %v %s %s %d", o.Type, o.Process, o.F, o.Value.Holder, o.Time/1e9))
	}
	want := []string{
		"invoke 0 acquire tok-a 0", "ok 0 acquire tok-a 0",
		"invoke 0 enter tok-a 0", "ok 0 enter tok-a 0",
		"invoke 1 acquire tok-b 0", "fail 1 acquire tok-b 0",
		"info nemesis expire tok-a 31", "info nemesis expire tok-a 31",
		"invoke 1 acquire tok-b 31", "ok 1 acquire tok-b 31",
		"invoke 0 leave tok-a 31", "ok 0 leave tok-a 31",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestAFailedTestLeavesItsTimeline(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("RLOCKD_ARTIFACTS", dir)
	for _, fail := range []bool{false, true} {
		rec := &recorder{TB: t}
		srv := Start(rec)
		srv.Do("SET", "orders", "tok", "NX", "PX", 30000)
		rec.failed = fail
		rec.runCleanups()
		joined := strings.Join(rec.logs, "\n")
		if fail != strings.Contains(joined, "rlockd timeline (port "+itoa(srv.Port())+"): "+dir) {
			t.Fatalf("failed=%v, logs: %q", fail, joined)
		}
	}
	files, _ := os.ReadDir(dir)
	if len(files) != 1 {
		t.Fatalf("%d files: only the failed test writes one", len(files))
	}
	b, _ := os.ReadFile(filepath.Join(dir, files[0].Name()))
	if !strings.Contains(string(b), `data-lock="orders"`) {
		t.Fatal("not the server's timeline")
	}
}

func TestAFailedTestLeavesItsRecording(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("RLOCKD_ARTIFACTS", dir)
	t.Setenv("RLOCKD_RECORD", "1")
	rec := &recorder{TB: t}
	srv := Start(rec)
	srv.Do("SET", "orders", "tok-a", "NX", "PX", 30000)
	srv.Do("SET", "orders", "tok-b", "NX", "PX", 30000)
	rec.failed = true
	rec.runCleanups()
	joined := strings.Join(rec.logs, "\n")
	want := "rlockd recording (port " + itoa(srv.Port()) + "): " + dir
	if !strings.Contains(joined, want) {
		t.Fatalf("logs: %q", joined)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*-recording.jsonl"))
	if len(files) != 1 {
		t.Fatalf("%d recordings", len(files))
	}
	b, _ := os.ReadFile(files[0])
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if !strings.HasPrefix(lines[0], `{"t":"rlockd-record"`) {
		t.Fatalf("no header: %s", lines[0])
	}
	if !strings.Contains(string(b), `"args":["SET","orders","tok-b","NX","PX","30000"]`) ||
		!strings.Contains(string(b), `"reply":"$-1\r\n"`) {
		t.Fatalf("the refused SET is not recorded: %s", b)
	}
}
