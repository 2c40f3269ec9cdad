package check

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// op writes one operation as RLOCKD HISTORY does: its invocation and its completion.
type hb struct {
	b       strings.Builder
	n       int
	process map[string]int
}

func (h *hb) entry(ms int64, typ, process, f, key, holder string, count int64, deadline string) {
	if h.n > 0 {
		h.b.WriteString(",\n")
	}
	fmt.Fprintf(&h.b, `{"index":%d, "time":%d, "type":%q, "process":%s, "f":%q, "value":{"key":%q, "db":0, "holder":%q, "kind":"token", "count":%d, "deadline":%s}}`,
		h.n, ms*1_000_000, typ, process, f, key, holder, count, deadline)
	h.n++
}

func (h *hb) op(ms int64, f, key, holder string, count int64) *hb {
	if h.process == nil {
		h.process = map[string]int{}
	}
	p, ok := h.process[holder]
	if !ok {
		p = len(h.process)
		h.process[holder] = p
	}
	h.entry(ms, "invoke", fmt.Sprint(p), f, key, holder, count, "null")
	h.entry(ms, "ok", fmt.Sprint(p), f, key, holder, count, "null")
	return h
}

func (h *hb) lease(ms int64, key, holder string, untilMs int64) *hb {
	p := len(h.process)
	h.process[holder] = p
	d := fmt.Sprint(untilMs * 1_000_000)
	h.entry(ms, "invoke", fmt.Sprint(p), "acquire", key, holder, 1, d)
	h.entry(ms, "ok", fmt.Sprint(p), "acquire", key, holder, 1, d)
	return h
}

func (h *hb) nemesis(ms int64, f, key, holder string) *hb {
	h.entry(ms, "info", `"nemesis"`, f, key, holder, 0, "null")
	h.entry(ms, "info", `"nemesis"`, f, key, holder, 0, "null")
	return h
}

func (h *hb) json() string { return "[\n" + h.b.String() + "\n]\n" }

func verdict(t *testing.T, history string) Verdict {
	t.Helper()
	entries, err := Read(strings.NewReader(history))
	if err != nil {
		t.Fatalf("read: %v\n%s", err, history)
	}
	ops, err := Pair(entries)
	if err != nil {
		t.Fatalf("pair: %v\n%s", err, history)
	}
	return Check(ops, 0)
}

func TestLegalHistories(t *testing.T) {
	h := (&hb{process: map[string]int{}}).
		op(0, "acquire", "a", "u1:1", 1).
		op(1, "acquire", "a", "u1:1", 2). // re-entered
		op(2, "renew", "a", "u1:1", 2).
		op(3, "enter", "a", "u1:1", 0).
		op(4, "leave", "a", "u1:1", 0).
		op(5, "release", "a", "u1:1", 1).
		op(6, "release", "a", "u1:1", 0).
		op(7, "acquire", "a", "u2:1", 1).
		op(7, "acquire", "b", "u1:1", 1). // another lock: its own partition
		nemesis(9, "expire", "a", "u2:1").
		op(9, "acquire", "a", "u3:1", 1)
	v := verdict(t, h.json())
	if v.Result != porcupine.Ok || v.Ops != 11 || v.Locks != 2 {
		t.Fatalf("%+v", v)
	}
	// A lost grant whose lease ended before the next acquire.
	h = (&hb{process: map[string]int{}}).lease(0, "a", "old", 1000).nemesis(10, "lose", "a", "old").op(1000, "acquire", "a", "new", 1)
	if v := verdict(t, h.json()); v.Result != porcupine.Ok {
		t.Fatalf("%+v", v)
	}
}

func TestViolations(t *testing.T) {
	cases := map[string]*hb{
		// A failover lost the grant; a second client took the lock within its lease.
		"lossy failover": (&hb{process: map[string]int{}}).lease(0, "a", "old", 30000).nemesis(10, "lose", "a", "old").op(20, "acquire", "a", "new", 1),
		// The holder's lease expired while it was paused; it leaves its section after another took the lock.
		"paused holder": (&hb{process: map[string]int{}}).op(0, "acquire", "a", "u1", 1).op(1, "enter", "a", "u1", 0).
			nemesis(100, "expire", "a", "u1").op(101, "acquire", "a", "u2", 1).op(200, "leave", "a", "u1", 0),
		"two holders":        (&hb{process: map[string]int{}}).op(0, "acquire", "a", "u1", 1).op(1, "acquire", "a", "u2", 1),
		"release not held":   (&hb{process: map[string]int{}}).op(0, "release", "a", "u1", 0),
		"renewed by another": (&hb{process: map[string]int{}}).op(0, "acquire", "a", "u1", 1).op(1, "renew", "a", "u2", 1),
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			v := verdict(t, h.json())
			if v.Result != porcupine.Illegal || v.First == "" {
				t.Fatalf("%+v\n%s", v, h.json())
			}
			var html bytes.Buffer
			if err := v.Visualize(&html); err != nil || !strings.Contains(html.String(), "<html") {
				t.Fatalf("visualisation: %v", err)
			}
		})
	}
}

// A refused acquire is legal while another holds the lock; an acquire whose result is
// unknown may or may not have happened.
func TestRefusedAndUnknown(t *testing.T) {
	refused := `[{"index":0,"time":0,"type":"invoke","process":0,"f":"acquire","value":{"key":"a","holder":"u1","count":1}},
{"index":1,"time":1,"type":"ok","process":0,"f":"acquire","value":{"key":"a","holder":"u1","count":1}},
{"index":2,"time":2,"type":"invoke","process":1,"f":"acquire","value":{"key":"a","holder":"u2","count":1}},
{"index":3,"time":3,"type":"fail","process":1,"f":"acquire","value":{"key":"a","holder":"u2","count":1}}]`
	if v := verdict(t, refused); v.Result != porcupine.Ok {
		t.Fatalf("%+v", v)
	}
	freeButRefused := `{"index":0,"time":0,"type":"invoke","process":1,"f":"acquire","value":{"key":"a","holder":"u2","count":1}}
{"index":1,"time":3,"type":"fail","process":1,"f":"acquire","value":{"key":"a","holder":"u2","count":1}}`
	if v := verdict(t, freeButRefused); v.Result != porcupine.Illegal {
		t.Fatalf("%+v", v)
	}
	// u1's acquire timed out (info): u2 then got the lock, so u1's did not happen.
	unknown := `{"index":0,"time":0,"type":"invoke","process":0,"f":"acquire","value":{"key":"a","holder":"u1","count":1}}
{"index":1,"time":1,"type":"info","process":0,"f":"acquire","value":{"key":"a","holder":"u1","count":1}}
{"index":2,"time":2,"type":"invoke","process":1,"f":"acquire","value":{"key":"a","holder":"u2","count":1}}
{"index":3,"time":3,"type":"ok","process":1,"f":"acquire","value":{"key":"a","holder":"u2","count":1}}`
	if v := verdict(t, unknown); v.Result != porcupine.Ok {
		t.Fatalf("%+v", v)
	}
	// Then u1 entering its section: its acquire did not happen, so that is a violation.
	if v := verdict(t, unknown+`
{"index":4,"time":4,"type":"invoke","process":0,"f":"enter","value":{"key":"a","holder":"u1"}}
{"index":5,"time":5,"type":"ok","process":0,"f":"enter","value":{"key":"a","holder":"u1"}}`); v.Result != porcupine.Illegal {
		t.Fatalf("%+v", v)
	}
}

// A history that cannot be right is reported, with the entry, and never panics.
func TestMalformedHistories(t *testing.T) {
	good := (&hb{process: map[string]int{}}).op(0, "acquire", "a", "u1", 1).op(5, "release", "a", "u1", 0).json()
	type tc struct{ history, want string }
	cases := map[string]tc{
		"time goes back":     {strings.Replace(good, `"time":5000000`, `"time":-1`, 1), "entry 2: time -1 is negative"},
		"index out of order": {strings.Replace(good, `"index":2,`, `"index":0,`, 1), "entry 2: index 0 after index 1"},
		"completion first":   {`[{"index":0,"time":0,"type":"ok","process":0,"f":"acquire","value":{"key":"a","holder":"u"}}]`, "entry 0: process 0 completes acquire (ok) that it never invoked"},
		"invoked twice":      {`[{"time":0,"type":"invoke","process":0,"f":"acquire","value":{"key":"a","holder":"u"}},{"time":0,"type":"invoke","process":0,"f":"release","value":{"key":"a","holder":"u"}}]`, "entry 1: process 0 invokes release while its acquire"},
		"no time":            {`[{"index":0,"type":"invoke","process":0,"f":"acquire","value":{"key":"a","holder":"u"}}]`, "entry 0: no time"},
		"unknown f":          {`[{"time":0,"type":"invoke","process":0,"f":"cas","value":{"key":"a","holder":"u"}}]`, `entry 0: f "cas"`},
		"unknown type":       {`[{"time":0,"type":"done","process":0,"f":"acquire","value":{"key":"a","holder":"u"}}]`, `entry 0: type "done"`},
		"bad process":        {`[{"time":0,"type":"invoke","process":"p1","f":"acquire","value":{"key":"a","holder":"u"}}]`, `entry 0: process "p1"`},
		"no key":             {`[{"time":0,"type":"invoke","process":0,"f":"acquire","value":{"holder":"u"}}]`, "entry 0: value has no key"},
		"not json":           {`[{"time":0,`, "malformed history: not a JSON array"},
		"bad line":           {"{\"time\":0}\n{oops}\n", "entry 1: not a JSON object"},
		"empty":              {"  \n", "empty input"},
		"other completion":   {`[{"time":0,"type":"invoke","process":0,"f":"acquire","value":{"key":"a","holder":"u"}},{"time":1,"type":"ok","process":0,"f":"release","value":{"key":"a","holder":"u"}}]`, "entry 1: process 0 completes release"},
	}
	// A time earlier than the entry before it.
	cases["time before"] = tc{strings.Replace(good, `"index":3, "time":5000000`, `"index":3, "time":1`, 1), "entry 3: time 1 is before the previous entry's 5000000"}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			entries, err := Read(strings.NewReader(c.history))
			if err == nil {
				_, err = Pair(entries)
			}
			var fe *FormatError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q\n%s", err, c.want, c.history)
			}
		})
	}
}

// generate writes a history of n operations (about) on locks many locks, every holder taking
// its lock, renewing, entering and leaving its section and releasing it, some leases expiring.
func generate(n, locks int) string {
	h := &hb{process: map[string]int{}}
	h.b.Grow(n * 2 * 200)
	ms := int64(0)
	for i := 0; h.n < 2*n; i++ {
		key := fmt.Sprintf("lock:%d", i%locks)
		holder := fmt.Sprintf("uuid-%d:%d", i%7, i)
		ms++
		h.op(ms, "acquire", key, holder, 1)
		h.op(ms, "enter", key, holder, 0)
		h.op(ms, "renew", key, holder, 1)
		h.op(ms, "leave", key, holder, 0)
		if i%5 == 0 {
			h.nemesis(ms+1, "expire", key, holder)
		} else {
			h.op(ms+1, "release", key, holder, 0)
		}
	}
	return h.json()
}

func checkGenerated(t testing.TB, history string) (Verdict, time.Duration) {
	start := time.Now()
	entries, err := Read(strings.NewReader(history))
	if err != nil {
		t.Fatal(err)
	}
	ops, err := Pair(entries)
	if err != nil {
		t.Fatal(err)
	}
	v := Check(ops, 0)
	return v, time.Since(start)
}

func TestGeneratedHistoriesAreLegal(t *testing.T) {
	v, _ := checkGenerated(t, generate(1000, 10))
	if v.Result != porcupine.Ok || v.Ops < 1000 {
		t.Fatalf("%+v", v)
	}
}

// BenchmarkCheck1000 and BenchmarkCheck100000 time reading, pairing and checking a history
// of that many operations on 100 locks (BENCHMARKS.md).
func BenchmarkCheck1000(b *testing.B)   { benchmarkCheck(b, 1000) }
func BenchmarkCheck100000(b *testing.B) { benchmarkCheck(b, 100000) }

func benchmarkCheck(b *testing.B, n int) {
	history := generate(n, 100)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if v, _ := checkGenerated(b, history); v.Result != porcupine.Ok {
			b.Fatalf("%+v", v)
		}
	}
}

// The report names the first operation the model refuses, in history order.
func TestTheReportNamesTheFirstRefused(t *testing.T) {
	h := (&hb{process: map[string]int{}}).lease(0, "a", "old", 30000).nemesis(10, "lose", "a", "old").op(20, "acquire", "a", "new", 1)
	v := verdict(t, h.json())
	if !strings.Contains(v.First, "acquire by new") || !strings.Contains(v.First, "held by old") {
		t.Fatalf("%q", v.First)
	}
}
