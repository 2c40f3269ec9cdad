package check

import (
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// State is one lock's state in the model: who holds it, how many times, until when.
type State struct {
	Holder string
	Count  int64
	// Deadline ends the lease (nanoseconds, as Op.Time), when HasDeadline.
	Deadline    int64
	HasDeadline bool
}

// input is what the model is told of an operation.
type input struct {
	F, Holder   string
	Count       int64
	Time        int64
	Deadline    int64
	HasDeadline bool
	Process     int
}

// held reports whether s is held by someone at time t: a holder, and its lease not over.
func (s State) held(t int64) bool {
	return s.Holder != "" && !(s.HasDeadline && t >= s.Deadline)
}

// step is the lease lock: the states after in completed with result (ok or fail), and
// whether that was legal.
func step(s State, in input, result string) (bool, State) {
	mine := s.held(in.Time) && s.Holder == in.Holder
	withLease := func(n State) State {
		if in.HasDeadline {
			n.Deadline, n.HasDeadline = in.Deadline, true
		}
		return n
	}
	switch in.F {
	case "acquire":
		if result == "fail" {
			// Refused: legal only while another holder's lease runs.
			return s.held(in.Time) && !mine, s
		}
		count := in.Count
		if mine {
			if count <= s.Count {
				count = s.Count + 1
			}
			n := s
			n.Count = count
			return true, withLease(n)
		}
		if s.held(in.Time) {
			return false, s
		}
		if count < 1 {
			count = 1
		}
		return true, withLease(State{Holder: in.Holder, Count: count})
	case "renew":
		if result == "fail" {
			return true, s
		}
		return mine, withLease(s)
	case "release":
		if result == "fail" {
			return true, s
		}
		if s.Holder != in.Holder {
			return false, s
		}
		if in.Count <= 0 {
			return true, State{}
		}
		n := s
		n.Count = in.Count
		return true, n
	case "enter", "leave":
		if result == "fail" {
			return true, s
		}
		return mine, s
	case "expire":
		// The server ended in.Holder's lease: the lock is free, unless someone else took it.
		if s.Holder == in.Holder {
			return true, State{}
		}
		return true, s
	case "lose":
		// A failover forgot the grant; its client still holds it until its deadline.
		return true, s
	}
	return false, s
}

func describeOp(in, out interface{}) string {
	i := in.(input)
	who := i.Holder
	if i.Process == Nemesis {
		return fmt.Sprintf("%s %s (nemesis)", i.F, who)
	}
	return fmt.Sprintf("%s by %s → %s", i.F, who, out.(string))
}

func describeState(st interface{}) string {
	s := st.(State)
	if s.Holder == "" {
		return "free"
	}
	lease := "no lease"
	if s.HasDeadline {
		lease = fmt.Sprintf("lease until %.3fs", float64(s.Deadline)/1e9)
	}
	return fmt.Sprintf("held by %s ×%d, %s", s.Holder, s.Count, lease)
}

// Model is the lease lock as Porcupine's model, partitioned by lock (db and key). A
// completion of type info (unknown) may or may not have taken effect.
func Model() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			byLock := map[string][]porcupine.Operation{}
			var order []string
			for _, op := range h {
				k := op.Metadata.(string)
				if _, seen := byLock[k]; !seen {
					order = append(order, k)
				}
				byLock[k] = append(byLock[k], op)
			}
			out := make([][]porcupine.Operation, 0, len(order))
			for _, k := range order {
				out = append(out, byLock[k])
			}
			return out
		},
		Init: func() []interface{} { return []interface{}{State{}} },
		Step: func(st, in, out interface{}) []interface{} {
			s, i, result := st.(State), in.(input), out.(string)
			if result == "info" {
				next := []interface{}{s}
				if ok, n := step(s, i, "ok"); ok && n != s {
					next = append(next, n)
				}
				return next
			}
			if ok, n := step(s, i, result); ok {
				return []interface{}{n}
			}
			return nil
		},
		Equal:                     func(a, b interface{}) bool { return a.(State) == b.(State) },
		DescribeOperation:         describeOp,
		DescribeState:             describeState,
		DescribeOperationMetadata: func(m interface{}) string { return m.(string) },
	}
	return nm.ToModel()
}

// Skipped kinds hold several owners at once (readers, permits): not a lease lock.
var multiHolder = map[string]bool{"read-write": true, "counter": true, "zset-semaphore": true}

// Verdict is the outcome of a check.
type Verdict struct {
	// Result is porcupine.Ok, porcupine.Illegal or porcupine.Unknown (timed out).
	Result porcupine.CheckResult
	// Ops and Locks are how many operations were checked, on how many locks; Skipped the
	// operations on locks of several holders.
	Ops, Locks, Skipped int
	// First names the first operation, in history order, that the model refuses (empty
	// when legal).
	First string
	info  porcupine.LinearizationInfo
	model porcupine.Model
}

// Operations turns paired operations into Porcupine's, with each lock as metadata.
func Operations(ops []Op) (out []porcupine.Operation, skipped int) {
	maxProcess := 0
	for _, o := range ops {
		if o.Process > maxProcess {
			maxProcess = o.Process
		}
	}
	end := int64(0)
	for _, o := range ops {
		if o.Return > end {
			end = o.Return
		}
	}
	for _, o := range ops {
		if multiHolder[o.Value.Kind] {
			skipped++
			continue
		}
		in := input{F: o.F, Holder: o.Value.Holder, Count: o.Value.Count, Time: o.Time, Process: o.Process}
		if o.Value.Deadline != nil {
			in.Deadline, in.HasDeadline = *o.Value.Deadline, true
		}
		client := o.Process
		if client == Nemesis {
			client = maxProcess + 1
		}
		// Positions doubled: an instantaneous nemesis operation still spans one tick; an
		// unknown result may take effect until the history's end.
		call, ret := 2*o.Call, 2*o.Return+1
		if o.Result == "info" && o.Process != Nemesis {
			ret = 2*end + 3
		}
		out = append(out, porcupine.Operation{
			ClientId: client,
			Input:    in,
			Call:     call,
			Output:   o.Result,
			Return:   ret,
			Metadata: fmt.Sprintf("db%d %s", o.Value.DB, o.Value.Key),
		})
	}
	return out, skipped
}

// Check runs Porcupine on the operations (timeout 0: no limit).
func Check(ops []Op, timeout time.Duration) Verdict {
	model := Model()
	pops, skipped := Operations(ops)
	locks := map[string]bool{}
	for _, o := range pops {
		locks[o.Metadata.(string)] = true
	}
	result, info := porcupine.CheckOperationsVerbose(model, pops, timeout)
	v := Verdict{Result: result, Ops: len(pops), Locks: len(locks), Skipped: skipped, info: info, model: model}
	if result != porcupine.Ok {
		v.First = firstRefused(pops)
	}
	return v
}

// firstRefused replays each lock's operations in history order and names the first the
// model refuses: for the report (Porcupine decided the verdict).
func firstRefused(pops []porcupine.Operation) string {
	sorted := append([]porcupine.Operation(nil), pops...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	states := map[string]State{}
	for _, o := range sorted {
		k, in, result := o.Metadata.(string), o.Input.(input), o.Output.(string)
		if result == "info" {
			continue
		}
		ok, n := step(states[k], in, result)
		if !ok {
			return fmt.Sprintf("lock %s: %s at %.3fs while %s", k, describeOp(in, result), float64(in.Time)/1e9, describeState(states[k]))
		}
		states[k] = n
	}
	return ""
}

// Visualize writes Porcupine's HTML visualisation of the check.
func (v Verdict) Visualize(w io.Writer) error {
	return porcupine.Visualize(v.model, v.info, w)
}
