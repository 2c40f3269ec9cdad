package rlockd

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The module's fault table (faultParams, Fault.args) and reply structs agree with the server's
// description of itself (RLOCKD SCHEMA, written from the server's own table): a kind, an
// argument, a scope option or a reply field added or renamed on one side fails here.

// schemaOf is RLOCKD SCHEMA [sub] with RESP2's flat maps read as maps.
func schemaOf(srv *Server, sub ...any) any {
	return maps(srv.rlockd(append([]any{"SCHEMA"}, sub...)...))
}

// maps reads the schema's flat arrays as maps (a map of the schema starts with "name").
func maps(v any) any {
	l, ok := v.([]any)
	if !ok {
		return v
	}
	if len(l)%2 == 0 && len(l) > 0 && asString(l[0]) == "name" {
		m := map[string]any{}
		for i := 0; i < len(l); i += 2 {
			m[asString(l[i])] = maps(l[i+1])
		}
		return m
	}
	out := make([]any, len(l))
	for i, x := range l {
		out[i] = maps(x)
	}
	return out
}

func strs(v any) []string {
	var out []string
	for _, x := range asList(v) {
		out = append(out, asString(x))
	}
	return out
}

func opOf(sub any, name string) map[string]any {
	for _, o := range asList(sub.(map[string]any)["ops"]) {
		if m := o.(map[string]any); asString(m["name"]) == name {
			return m
		}
	}
	return nil
}

// fieldName is a schema name as Go spells a field: ms -> Ms, client_id -> ClientID, db -> DB.
func fieldName(name string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '_' || r == '-' }) {
		if part == "id" || part == "db" {
			b.WriteString(strings.ToUpper(part))
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// The Fault field each scope option of the server is set with.
var scopeField = map[string]string{
	"command": "Command", "key": "Key", "client": "Client", "id": "ClientID", "channel": "Channel", "times": "Times",
}

func TestFaultTableMatchesTheServer(t *testing.T) {
	srv := Start(t)
	fault := schemaOf(srv, "FAULT")
	var kinds []string
	for _, o := range asList(fault.(map[string]any)["ops"]) {
		k := o.(map[string]any)
		if asString(k["group"]) != "kind" {
			continue
		}
		name := asString(k["name"])
		kinds = append(kinds, name)
		// Its argument fields, in the server's order; a Fault with each set makes its words.
		f := Fault{Kind: FaultKind(name)}
		want := []string{"FAULT", strings.ToUpper(name)}
		var fields []string
		for _, a := range asList(k["args"]) {
			arg := a.(map[string]any)
			field := fieldName(asString(arg["name"]))
			fields = append(fields, field)
			v := reflect.ValueOf(&f).Elem().FieldByName(field)
			if !v.IsValid() {
				t.Fatalf("Fault has no field %s for %s's argument %s", field, name, asString(arg["name"]))
			}
			if tok := asString(arg["token"]); tok != "" {
				want = append(want, tok)
			}
			switch {
			case asString(arg["type"]) == "choice":
				choice := strs(arg["choices"])[len(strs(arg["choices"]))-1]
				v.SetString(choice)
				want = append(want, strings.ToUpper(choice))
			case v.Kind() == reflect.String:
				v.SetString("ERR x")
				want = append(want, "ERR x")
			default:
				v.SetInt(7)
				want = append(want, "7")
			}
		}
		if !slices.Equal(faultParams[FaultKind(name)], fields) {
			t.Errorf("faultParams[%s] = %v, the server's arguments %v", name, faultParams[FaultKind(name)], fields)
		}
		// Each scope option it takes.
		for _, o := range strs(k["options"]) {
			field, ok := scopeField[o]
			if !ok {
				t.Fatalf("no Fault field for the server's scope option %s", o)
			}
			g := f
			v := reflect.ValueOf(&g).Elem().FieldByName(field)
			if v.Kind() == reflect.String {
				v.SetString("p")
			} else {
				v.SetInt(3)
			}
			want := append(slices.Clone(want), strings.ToUpper(o), fmt.Sprint(v.Interface()))
			got, err := g.args()
			if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s with %s: %v %v, want %v", name, field, got, err, want)
			}
		}
		got, err := f.args()
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: args %v %v, want %v", name, got, err, want)
		}
	}
	var ours []string
	for k := range faultParams {
		ours = append(ours, string(k))
	}
	slices.Sort(ours)
	sorted := slices.Clone(kinds)
	slices.Sort(sorted)
	if !slices.Equal(ours, sorted) {
		t.Errorf("faultParams has kinds %v, the server %v", ours, sorted)
	}
}

func TestReplyStructsHaveTheServersFields(t *testing.T) {
	srv := Start(t)
	for _, c := range []struct {
		typ    any
		fields []string
	}{
		{FaultInfo{}, strs(opOf(schemaOf(srv, "FAULT"), "list")["fields"])},
		{ClockInfo{}, strs(opOf(schemaOf(srv, "CLOCK"), "info")["fields"])},
		{Lock{}, strs(schemaOf(srv, "LOCKS").(map[string]any)["fields"])},
		{LockEvent{}, strs(schemaOf(srv, "EVENTS").(map[string]any)["fields"])},
	} {
		var want, got []string
		for _, f := range c.fields {
			want = append(want, fieldName(f))
		}
		typ := reflect.TypeOf(c.typ)
		for i := 0; i < typ.NumField(); i++ {
			got = append(got, typ.Field(i).Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s has fields %v, the server's reply %v", typ.Name(), got, want)
		}
	}
}

func TestEveryRlockdOperationSentIsInTheSchema(t *testing.T) {
	srv := Start(t)
	ops := map[string][]string{}
	for _, s := range asList(schemaOf(srv)) {
		m := s.(map[string]any)
		var names []string
		for _, o := range asList(m["ops"]) {
			names = append(names, asString(o.(map[string]any)["name"]))
		}
		ops[asString(m["name"])] = names
	}
	var sent [][]string
	for _, file := range []string{"control.go", "topology.go"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, regexp.MustCompile(`rlockd\("([A-Z]+)"(?:, "([A-Z]+)")?`).FindAllStringSubmatch(string(src), -1)...)
	}
	if len(sent) < 10 {
		t.Fatalf("only %d RLOCKD calls found", len(sent))
	}
	for _, m := range sent {
		names, ok := ops[strings.ToLower(m[1])]
		if !ok {
			t.Errorf("RLOCKD %s is not in the schema", m[1])
		} else if m[2] != "" && len(names) > 0 && !slices.Contains(names, strings.ToLower(m[2])) {
			t.Errorf("RLOCKD %s %s is not in the schema", m[1], m[2])
		}
	}
}
