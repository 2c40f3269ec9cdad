package rlockd

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The RLOCKD test-control commands as typed methods. On an error reply they fail the test
// (t.Fatal) of a server from Start, and panic for a server from Run.

func (s *Server) rlockd(args ...any) any {
	if s.tb != nil {
		s.tb.Helper()
	}
	r, err := s.Do(append([]any{"RLOCKD"}, args...)...)
	if err != nil {
		s.fail("RLOCKD %s: %v", strings.TrimSpace(fmt.Sprintln(args...)), err)
	}
	return r
}

func (s *Server) fail(format string, args ...any) {
	if s.tb != nil {
		s.tb.Helper()
		s.tb.Fatalf("rlockd: "+format, args...)
	}
	panic(fmt.Sprintf("rlockd: "+format, args...))
}

// ---------------------------------------------------------------- clock

// ClockInfo is the server's clock (RLOCKD CLOCK INFO).
type ClockInfo struct {
	NowMs    int64 // unix ms
	OffsetMs int64 // how far it is from the system clock
	Frozen   bool
}

// ClockMs is the server's time in unix milliseconds.
func (s *Server) ClockMs() int64 { return asInt(s.rlockd("CLOCK", "GET")) }

// Clock is the server's time.
func (s *Server) Clock() time.Time { return time.UnixMilli(s.ClockMs()) }

// ClockInfo reads the clock: time, offset from the system clock, frozen or not.
func (s *Server) ClockInfo() ClockInfo {
	m := asMap(s.rlockd("CLOCK", "INFO"))
	return ClockInfo{NowMs: asInt(m["now_ms"]), OffsetMs: asInt(m["offset_ms"]), Frozen: asInt(m["frozen"]) != 0}
}

// AdvanceClock moves the server's time by d (negative: back); keys now due expire before it
// returns, with their "expired" events. It returns the new time in unix ms.
func (s *Server) AdvanceClock(d time.Duration) int64 {
	return asInt(s.rlockd("CLOCK", "ADVANCE", d.Milliseconds()))
}

// SetClock jumps to unixMs (back or forth) and returns the new time.
func (s *Server) SetClock(unixMs int64) int64 { return asInt(s.rlockd("CLOCK", "SET", unixMs)) }

// SkewClock runs the server d ahead of (negative: behind) the system clock; returns the new time.
func (s *Server) SkewClock(d time.Duration) int64 {
	return asInt(s.rlockd("CLOCK", "SKEW", d.Milliseconds()))
}

// FreezeClock stops the server's time (TTLs, TIME, blocking timeouts, scripts).
func (s *Server) FreezeClock() { s.rlockd("CLOCK", "FREEZE") }

// ResumeClock lets the server's time run again from where it stands.
func (s *Server) ResumeClock() { s.rlockd("CLOCK", "RESUME") }

// ---------------------------------------------------------------- locks

// Holder is one holder of a lock: a Redisson uuid:threadId, a token, a semaphore member.
type Holder struct {
	ID      string
	Count   int64    // re-entries (1 for non-reentrant locks)
	LeaseMs *int64   // this hold's remaining lease, when known
	Score   *float64 // a sorted-set holder's score
}

// Waiter is one waiter of a fair lock, in queue order.
type Waiter struct {
	ID         string
	DeadlineMs *int64
}

// Lock is a lock as the server reads it out of the keyspace (RLOCKD LOCKS).
type Lock struct {
	Key     string
	DB      int64
	Kind    string // reentrant, fair, read-write, token, counter or zset-semaphore
	Mode    string // "read" or "write" for a read-write lock, else ""
	LeaseMs *int64 // remaining TTL of the lock's key (nil: no TTL)
	Value   *int64 // a counter's value (free permits, a latch's count)
	Holders []Holder
	Waiters []Waiter
}

// LockEvent is something that happened to a lock (RLOCKD EVENTS).
type LockEvent struct {
	ID      int64
	TimeMs  int64
	DB      int64
	Key     string
	Kind    string
	Event   string // acquired, reentered, renewed, released, expired or counter
	Holder  string
	Count   int64
	Client  int64 // client id behind it (0 for an expiry)
	Command string
}

// Locks lists every lock in the keyspace, or those whose key matches the glob pattern.
func (s *Server) Locks(pattern ...string) []Lock {
	args := []any{"LOCKS"}
	for _, p := range pattern {
		args = append(args, p)
	}
	var out []Lock
	for _, x := range asList(s.rlockd(args...)) {
		m := asMap(x)
		l := Lock{Key: asString(m["key"]), DB: asInt(m["db"]), Kind: asString(m["kind"]), Mode: asString(m["mode"]),
			LeaseMs: optInt(m["lease_ms"]), Value: optInt(m["value"])}
		for _, h := range asList(m["holders"]) {
			hm := asMap(h)
			var score *float64
			if v, ok := hm["score"]; ok && v != nil {
				f, err := strconv.ParseFloat(asString(v), 64)
				if err == nil {
					score = &f
				}
			}
			l.Holders = append(l.Holders, Holder{ID: asString(hm["id"]), Count: asInt(hm["count"]),
				LeaseMs: optInt(hm["lease_ms"]), Score: score})
		}
		for _, w := range asList(m["waiters"]) {
			wm := asMap(w)
			l.Waiters = append(l.Waiters, Waiter{ID: asString(wm["id"]), DeadlineMs: optInt(wm["deadline_ms"])})
		}
		out = append(out, l)
	}
	return out
}

// LocksText is the same for people: one line per lock, holder and waiter.
func (s *Server) LocksText(pattern ...string) string {
	args := []any{"LOCKS"}
	for _, p := range pattern {
		args = append(args, p)
	}
	return asString(s.rlockd(append(args, "TEXT")...))
}

// LockEvents lists what happened to the locks (of key; "" for all) after event id since.
func (s *Server) LockEvents(key string, since int64) []LockEvent {
	args := []any{"EVENTS"}
	if key != "" {
		args = append(args, key)
	}
	if since != 0 {
		args = append(args, "SINCE", since)
	}
	var out []LockEvent
	for _, x := range asList(s.rlockd(args...)) {
		m := asMap(x)
		out = append(out, LockEvent{ID: asInt(m["id"]), TimeMs: asInt(m["time_ms"]), DB: asInt(m["db"]),
			Key: asString(m["key"]), Kind: asString(m["kind"]), Event: asString(m["event"]),
			Holder: asString(m["holder"]), Count: asInt(m["count"]), Client: asInt(m["client"]),
			Command: asString(m["command"])})
	}
	return out
}

// CheckLocks lists every lock safety violation the server saw (empty: nothing was unsafe).
func (s *Server) CheckLocks() []string {
	var out []string
	for _, v := range asList(s.rlockd("CHECK")) {
		out = append(out, asString(v))
	}
	return out
}

// ResetLockChecks forgets the events and violations seen so far.
func (s *Server) ResetLockChecks() { s.rlockd("CHECK", "RESET") }

// AssertLocksSafe fails the test (panics for a server from Run), listing the violations,
// if the server saw any: no two holders at once, no queue jumped.
func (s *Server) AssertLocksSafe() {
	if s.tb != nil {
		s.tb.Helper()
	}
	if v := s.CheckLocks(); len(v) > 0 {
		s.fail("saw %d lock safety violation(s):\n  - %s", len(v), strings.Join(v, "\n  - "))
	}
}

// ---------------------------------------------------------------- timeline and claims

// Timeline is the lock history as one self-contained HTML document (RLOCKD TIMELINE), also
// written to path unless path is empty.
func (s *Server) Timeline(path string) string {
	if s.tb != nil {
		s.tb.Helper()
	}
	doc := asString(s.rlockd("TIMELINE"))
	if path != "" {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			s.fail("writing the timeline: %v", err)
		}
	}
	return doc
}

// TimelineJSON is the same data as JSON (RLOCKD TIMELINE FORMAT json), of the locks whose
// keys match the glob pattern key (all with "").
func (s *Server) TimelineJSON(key string) string {
	if s.tb != nil {
		s.tb.Helper()
	}
	args := []any{"TIMELINE", "FORMAT", "json"}
	if key != "" {
		args = append(args, "KEY", key)
	}
	return asString(s.rlockd(args...))
}

// History is the lock history as Jepsen-style operations (RLOCKD HISTORY): a JSON array of
// invocations and completions (index, time, type, process, f, value), of the locks whose keys
// match the glob pattern key (all with ""), also written to path unless path is empty. The
// module rlockd.dev/rlockd/check checks it with Porcupine: go run ./cmd/check history.json.
func (s *Server) History(path, key string) string {
	if s.tb != nil {
		s.tb.Helper()
	}
	args := []any{"HISTORY"}
	if key != "" {
		args = append(args, "KEY", key)
	}
	doc := asString(s.rlockd(args...))
	if path != "" {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			s.fail("writing the history: %v", err)
		}
	}
	return doc
}

// Claim marks the application's code as inside the critical section of lock, held as holder
// (RLOCKD CLAIM ENTER; holder as the lock's script writes it: redsync's mutex.Value(), the
// token of SET key token NX PX), and returns the function that leaves it (RLOCKD CLAIM
// LEAVE): defer srv.Claim("orders", mutex.Value())(). CheckLocks then flags a section that
// overlapped another holder's grant or outlived its own lease.
func (s *Server) Claim(lock, holder string) (leave func()) {
	if s.tb != nil {
		s.tb.Helper()
	}
	s.rlockd("CLAIM", "ENTER", lock, holder)
	return func() { s.rlockd("CLAIM", "LEAVE", lock, holder) }
}

// saveRecording saves the recording of a failed test (RLOCKD_RECORD=1) beside its timeline,
// for rlockd replay, and logs its path.
func (s *Server) saveRecording(tb testing.TB) {
	if os.Getenv("RLOCKD_RECORD") != "1" {
		return
	}
	path, err := artifact(tb, s.port, "recording.jsonl")
	if err == nil {
		_, err = s.Do("RLOCKD", "RECORD", "SAVE", path)
	}
	if err != nil {
		tb.Logf("rlockd recording not written: %v", err)
		return
	}
	tb.Logf("rlockd recording (port %d): %s", s.port, path)
}

// artifact is the path of a failed test's file under RLOCKD_ARTIFACTS (default
// rlockd-artifacts in the test's working directory), its directory made.
func artifact(tb testing.TB, port int, what string) (string, error) {
	dir := os.Getenv("RLOCKD_ARTIFACTS")
	if dir == "" {
		dir = "rlockd-artifacts"
	}
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, tb.Name())
	path, err := filepath.Abs(filepath.Join(dir, fmt.Sprintf("%s-%d-%s", name, port, what)))
	if err == nil {
		err = os.MkdirAll(filepath.Dir(path), 0o755)
	}
	return path, err
}

// writeTimeline writes the timeline of a failed test under RLOCKD_ARTIFACTS (default
// rlockd-artifacts in the test's working directory) and logs its path; a server that cannot
// answer is skipped silently (its log says why).
func (s *Server) writeTimeline(tb testing.TB) {
	doc, err := s.Do("RLOCKD", "TIMELINE")
	if err != nil {
		return
	}
	path, err := artifact(tb, s.port, "timeline.html")
	if err == nil {
		err = os.WriteFile(path, []byte(asString(doc)), 0o644)
	}
	if err != nil {
		tb.Logf("rlockd timeline not written: %v", err)
		return
	}
	tb.Logf("rlockd timeline (port %d): %s", s.port, path)
}

// ---------------------------------------------------------------- snapshots

// Snapshot captures every database, TTLs included, under name.
func (s *Server) Snapshot(name string) { s.rlockd("SNAPSHOT", name) }

// Restore replaces every database with snapshot name (as after a failover).
func (s *Server) Restore(name string) { s.rlockd("RESTORE", name) }

// Snapshots lists the snapshot names.
func (s *Server) Snapshots() []string {
	var out []string
	for _, v := range asList(s.rlockd("SNAPSHOTS")) {
		out = append(out, asString(v))
	}
	return out
}

// ---------------------------------------------------------------- faults

// FaultKind is what a fault does.
type FaultKind string

const (
	FaultError     FaultKind = "error"     // answer Message instead of running the command
	FaultLatency   FaultKind = "latency"   // hold replies back Ms (± Jitter)
	FaultClose     FaultKind = "close"     // close the connection; When "before" (lost) or "after" (ran)
	FaultFreeze    FaultKind = "freeze"    // answer nothing for Ms
	FaultSlowWrite FaultKind = "slowwrite" // replies trickle out, Bytes per Ms
	FaultCutWrite  FaultKind = "cutwrite"  // Bytes of the reply, then the socket closes
	FaultDropMsg   FaultKind = "dropmsg"   // pub/sub messages lost (scope with Channel)
	FaultDelayMsg  FaultKind = "delaymsg"  // pub/sub messages delivered Ms late
)

// Fault is one fault to set with AddFault. Kind and its parameters (Message, Ms, Jitter,
// When, Bytes), then the scope: every condition given must hold (Command, Key, Client are
// patterns; ClientID a client id; Channel for message faults); Times > 0 removes it after
// that many matches.
//
//	srv.AddFault(rlockd.Fault{Kind: rlockd.FaultLatency, Ms: 200, Client: "worker-*", Times: 3})
type Fault struct {
	Kind     FaultKind
	Message  string
	Ms       int64
	Jitter   int64
	When     string
	Bytes    int64
	Command  string
	Key      string
	Client   string
	ClientID int64
	Channel  string
	Times    int64
}

// faultParams are the parameter fields each kind takes; every kind takes the scope fields.
var faultParams = map[FaultKind][]string{
	FaultError: {"Message"}, FaultLatency: {"Ms", "Jitter"}, FaultClose: {"When"}, FaultFreeze: {"Ms"},
	FaultDelayMsg: {"Ms"}, FaultSlowWrite: {"Bytes", "Ms"}, FaultCutWrite: {"Bytes"}, FaultDropMsg: {},
}

// check refuses a parameter field the fault's kind does not take (it would be ignored).
func (f Fault) check() error {
	takes, ok := faultParams[f.Kind]
	if !ok {
		return nil // args names the unknown kind
	}
	set := []struct {
		name string
		set  bool
	}{{"Message", f.Message != ""}, {"Ms", f.Ms != 0}, {"Jitter", f.Jitter != 0}, {"When", f.When != ""}, {"Bytes", f.Bytes != 0}}
	for _, field := range set {
		if field.set && !slices.Contains(takes, field.name) {
			return fmt.Errorf("rlockd.Fault{Kind: %q} does not take %s; it takes %s", f.Kind, field.name,
				strings.Join(append(append([]string{}, takes...), "Command", "Key", "Client", "ClientID", "Channel", "Times"), ", "))
		}
	}
	return nil
}

func (f Fault) args() ([]any, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	a := []any{"FAULT", strings.ToUpper(string(f.Kind))}
	switch f.Kind {
	case FaultError:
		a = append(a, f.Message)
	case FaultLatency:
		a = append(a, f.Ms)
		if f.Jitter != 0 {
			a = append(a, "JITTER", f.Jitter)
		}
	case FaultClose:
		if f.When != "" {
			a = append(a, strings.ToUpper(f.When))
		}
	case FaultFreeze, FaultDelayMsg:
		a = append(a, f.Ms)
	case FaultSlowWrite:
		a = append(a, f.Bytes, f.Ms)
	case FaultCutWrite:
		a = append(a, f.Bytes)
	case FaultDropMsg:
	default:
		return nil, fmt.Errorf("unknown fault kind %q", f.Kind)
	}
	for _, kv := range []struct {
		name  string
		value string
	}{{"COMMAND", f.Command}, {"KEY", f.Key}, {"CLIENT", f.Client}, {"CHANNEL", f.Channel}} {
		if kv.value != "" {
			a = append(a, kv.name, kv.value)
		}
	}
	if f.ClientID != 0 {
		a = append(a, "ID", f.ClientID)
	}
	if f.Times != 0 {
		a = append(a, "TIMES", f.Times)
	}
	return a, nil
}

// FaultInfo is a fault that is set (RLOCKD FAULT LIST).
type FaultInfo struct {
	ID        int64
	Kind      string
	Params    string
	Command   string
	Key       string
	Client    string
	ClientID  *int64
	Channel   string
	TimesLeft *int64 // matches left before it removes itself (nil: until cleared)
	Hits      int64
}

// AddFault sets a fault and returns its id.
func (s *Server) AddFault(f Fault) int64 {
	if s.tb != nil {
		s.tb.Helper()
	}
	a, err := f.args()
	if err != nil {
		s.fail("%v", err)
	}
	return asInt(s.rlockd(a...))
}

// Faults lists the faults set, with how often each applied.
func (s *Server) Faults() []FaultInfo {
	var out []FaultInfo
	for _, x := range asList(s.rlockd("FAULT", "LIST")) {
		m := asMap(x)
		out = append(out, FaultInfo{ID: asInt(m["id"]), Kind: asString(m["kind"]), Params: asString(m["params"]),
			Command: asString(m["command"]), Key: asString(m["key"]), Client: asString(m["client"]),
			ClientID: optInt(m["client_id"]), Channel: asString(m["channel"]), TimesLeft: optInt(m["times_left"]),
			Hits: asInt(m["hits"])})
	}
	return out
}

// ClearFaults removes every fault and returns how many went.
func (s *Server) ClearFaults() int64 { return asInt(s.rlockd("FAULT", "CLEAR")) }

// ClearFault removes fault id and returns how many went (0 or 1).
func (s *Server) ClearFault(id int64) int64 { return asInt(s.rlockd("FAULT", "CLEAR", id)) }

// KillClients closes now the connections whose name matches pattern; returns how many.
func (s *Server) KillClients(pattern string) int64 {
	return asInt(s.rlockd("FAULT", "KILL", "CLIENT", pattern))
}

// KillClient closes now the connection with client id id; returns how many (0 or 1).
func (s *Server) KillClient(id int64) int64 { return asInt(s.rlockd("FAULT", "KILL", "ID", id)) }

// ---------------------------------------------------------------- decoding

func asInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

func optInt(v any) *int64 {
	if v == nil {
		return nil
	}
	n := asInt(v)
	return &n
}

func asString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// asMap reads a RESP2 map, a flat array [k1, v1, k2, v2, ...].
func asMap(v any) map[string]any {
	l := asList(v)
	m := make(map[string]any, len(l)/2)
	for i := 0; i+1 < len(l); i += 2 {
		m[asString(l[i])] = l[i+1]
	}
	return m
}
