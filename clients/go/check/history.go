// Package check reads a lock history in Jepsen's format (what RLOCKD HISTORY writes) and
// checks it with Porcupine against a model of a lease lock: one owner at a time, held until
// released, expired or past its lease's deadline, re-entered by its owner.
//
// A history is a JSON array of operations, or JSON Lines, each with Jepsen's keys: index,
// time (nanoseconds), type (invoke, ok, fail, info), process (an integer, or "nemesis"), f
// and value. The fs are acquire, renew, release, enter and leave (a client's, an invocation
// then its completion) and expire and lose (the nemesis's: the server ended a lease, a
// failover lost a grant). The value names the lock (key, db), the holder (owner token), the
// hold count after the operation and the lease's deadline (same scale as time, or null).
package check

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Entry is one line of a history: an invocation or a completion.
type Entry struct {
	Index   *int64          `json:"index"`
	Time    *int64          `json:"time"`
	Type    string          `json:"type"`
	Process json.RawMessage `json:"process"`
	F       string          `json:"f"`
	Value   Value           `json:"value"`
}

// Value is what an operation is about.
type Value struct {
	Key      string `json:"key"`
	DB       int    `json:"db"`
	Holder   string `json:"holder"`
	Kind     string `json:"kind"`
	Count    int64  `json:"count"`
	Deadline *int64 `json:"deadline"`
}

// Op is one operation: an invocation paired with its completion.
type Op struct {
	// Process is the Jepsen process (-1: the nemesis).
	Process int
	F       string
	// Result is ok, fail or info (info: unknown whether it took effect).
	Result string
	Value  Value
	// Time is when it was invoked and when it completed (nanoseconds).
	Time, Done int64
	// Call and Return place it in the history (invocation and completion positions).
	Call, Return int64
}

// Nemesis is the process number of the nemesis's operations.
const Nemesis = -1

// FormatError says why a history cannot be checked: which entry, and what is wrong with it.
type FormatError struct {
	// Entry is the position of the offending entry (0-based), -1 for the whole input.
	Entry int
	Msg   string
}

func (e *FormatError) Error() string {
	if e.Entry < 0 {
		return "malformed history: " + e.Msg
	}
	return fmt.Sprintf("malformed history: entry %d: %s", e.Entry, e.Msg)
}

var clientFs = map[string]bool{"acquire": true, "renew": true, "release": true, "enter": true, "leave": true}
var nemesisFs = map[string]bool{"expire": true, "lose": true}

// Read parses a history: a JSON array of entries, or one JSON object per line.
func Read(r io.Reader) ([]Entry, error) {
	br := bufio.NewReader(r)
	var first byte
	for {
		b, err := br.ReadByte()
		if err == io.EOF {
			return nil, &FormatError{-1, "empty input: no operations"}
		}
		if err != nil {
			return nil, err
		}
		if !strings.ContainsRune(" \t\r\n", rune(b)) {
			first = b
			_ = br.UnreadByte()
			break
		}
	}
	dec := json.NewDecoder(br)
	dec.UseNumber()
	var entries []Entry
	if first == '[' {
		if err := dec.Decode(&entries); err != nil {
			return nil, &FormatError{-1, "not a JSON array of operations: " + err.Error()}
		}
		return entries, nil
	}
	for n := 0; ; n++ {
		var e Entry
		err := dec.Decode(&e)
		if err == io.EOF {
			return entries, nil
		}
		if err != nil {
			return nil, &FormatError{n, "not a JSON object: " + err.Error()}
		}
		entries = append(entries, e)
	}
}

func process(raw json.RawMessage) (int, bool) {
	raw = bytes.TrimSpace(raw)
	if string(raw) == `"nemesis"` {
		return Nemesis, true
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil || n < 0 || n > 1<<30 {
		return 0, false
	}
	return int(n), true
}

// Pair checks the history's shape and pairs each invocation with its completion: indexes
// strictly increasing, times present and never going back, a known type and f, a process
// that waits for its operation's completion before invoking the next, a completion only for
// an operation invoked. An invocation never completed is an operation whose result is
// unknown (info), as in Jepsen.
func Pair(entries []Entry) ([]Op, error) {
	var ops []Op
	pending := map[int]int{} // process → position in ops
	var lastIndex, lastTime int64 = -1, 0
	nemesisOpen := -1 // the nemesis's operation still open, if any
	for i, e := range entries {
		bad := func(format string, a ...interface{}) error { return &FormatError{i, fmt.Sprintf(format, a...)} }
		if e.Index != nil {
			if *e.Index <= lastIndex {
				return nil, bad("index %d after index %d: the entries are out of order", *e.Index, lastIndex)
			}
			lastIndex = *e.Index
		}
		if e.Time == nil {
			return nil, bad("no time")
		}
		t := *e.Time
		if t < 0 {
			return nil, bad("time %d is negative", t)
		}
		if t < lastTime {
			return nil, bad("time %d is before the previous entry's %d: time goes back", t, lastTime)
		}
		lastTime = t
		p, ok := process(e.Process)
		if !ok {
			return nil, bad("process %s is neither a non-negative integer nor \"nemesis\"", string(e.Process))
		}
		if e.Value.Key == "" {
			return nil, bad("value has no key")
		}
		pos := int64(i)
		if p == Nemesis {
			if !nemesisFs[e.F] {
				return nil, bad("the nemesis's f %q is not expire or lose", e.F)
			}
			switch e.Type {
			case "invoke", "info", "ok":
			default:
				return nil, bad("the nemesis's type %q is not invoke, info or ok", e.Type)
			}
			if nemesisOpen >= 0 && e.Type != "invoke" {
				o := &ops[nemesisOpen]
				if o.F == e.F && o.Value.Key == e.Value.Key && o.Value.Holder == e.Value.Holder {
					o.Return, o.Done = pos, t
					nemesisOpen = -1
					continue
				}
			}
			ops = append(ops, Op{Process: Nemesis, F: e.F, Result: "ok", Value: e.Value, Time: t, Done: t, Call: pos, Return: pos})
			nemesisOpen = len(ops) - 1
			continue
		}
		if !clientFs[e.F] {
			return nil, bad("f %q is not acquire, renew, release, enter or leave", e.F)
		}
		if e.Value.Holder == "" {
			return nil, bad("value has no holder")
		}
		switch e.Type {
		case "invoke":
			if at, busy := pending[p]; busy {
				return nil, bad("process %d invokes %s while its %s (entry %d) has not completed", p, e.F, ops[at].F, ops[at].Call)
			}
			pending[p] = len(ops)
			ops = append(ops, Op{Process: p, F: e.F, Result: "info", Value: e.Value, Time: t, Done: -1, Call: pos, Return: -1})
		case "ok", "fail", "info":
			at, busy := pending[p]
			if !busy {
				return nil, bad("process %d completes %s (%s) that it never invoked", p, e.F, e.Type)
			}
			o := &ops[at]
			if o.F != e.F || o.Value.Key != e.Value.Key {
				return nil, bad("process %d completes %s on %q but invoked %s on %q", p, e.F, e.Value.Key, o.F, o.Value.Key)
			}
			delete(pending, p)
			o.Result, o.Return, o.Done = e.Type, pos, t
			if e.Type != "fail" {
				o.Value = e.Value
			}
		default:
			return nil, bad("type %q is not invoke, ok, fail or info", e.Type)
		}
	}
	// Never completed: it may have happened at any time after its invocation.
	for _, at := range pending {
		ops[at].Return = int64(len(entries))
		ops[at].Done = lastTime
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	return ops, nil
}
