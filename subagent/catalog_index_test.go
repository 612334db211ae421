package subagent_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/acp-agent/acp-agent/subagent"
)

// fakeIndex is a CatalogIndex over the counting disk: it returns the
// disk's listing (without counting it as a List), honouring skip, with the
// values of values attached, and can run a hook during a scan.
type fakeIndex struct {
	disk   *catDisk
	values map[string]map[string]json.RawMessage
	hook   func(scan int64)
	scans  atomic.Int64
	// ignoreSkip makes it return live sessions too, as a stale index might.
	ignoreSkip bool
}

func (x *fakeIndex) Scan(ctx context.Context, skip func(id string) bool) ([]subagent.PersistedEntry, error) {
	n := x.scans.Add(1)
	all, err := x.disk.List(ctx)
	x.disk.listCalls.Add(-1)
	if err != nil {
		return nil, err
	}
	if x.hook != nil {
		x.hook(n)
	}
	var out []subagent.PersistedEntry
	for _, e := range all {
		if skip != nil && skip(e.Header.ID) && !x.ignoreSkip {
			continue
		}
		e.Values = x.values[e.Header.ID]
		out = append(out, e)
	}
	return out, nil
}

func identityValues(label string) map[string]json.RawMessage {
	return map[string]json.RawMessage{subagent.KeyIdentity: json.RawMessage(`{"seq":0,"mode":"continuable","provider":"spawn","label":"` + label + `"}`)}
}

// Indexed values are rung 2: a valid identity lists the child without
// reading it; a null, malformed or seq-gated one falls back to the log.
func TestCatalogIndexValuesAreACacheRung(t *testing.T) {
	f := newCatFix(t)
	for _, id := range []string{"a", "b", "c", "d"} {
		f.author(childHeader(id, "p", int64(id[0])), childEvents(descPayload("log of "+id, 2)))
	}
	x := &fakeIndex{disk: f.disk, values: map[string]map[string]json.RawMessage{
		"a": identityValues("indexed a"),
		"b": {subagent.KeyIdentity: json.RawMessage(`null`)},
		"c": {subagent.KeyIdentity: json.RawMessage(`{"broken`)},
	}}
	f.cat.Index = x
	rows := listChildren(t, f.cat, "p")
	got := map[string]string{}
	for _, r := range rows {
		got[r.ID] = r.Label
	}
	want := map[string]string{"a": "indexed a", "b": "log of b", "c": "log of c", "d": "log of d"}
	for id, label := range want {
		if got[id] != label {
			t.Errorf("%s: label %q; want %q", id, got[id], label)
		}
	}
	if f.disk.inspectedCount("a") != 0 || f.disk.inspectCalls.Load() != 3 || f.disk.listCalls.Load() != 0 {
		t.Fatalf("inspections a=%d total=%d, lists %d", f.disk.inspectedCount("a"), f.disk.inspectCalls.Load(), f.disk.listCalls.Load())
	}
}

// The index never makes a live child in its creation window visible: live
// sessions win over whatever the index says about them.
func TestCatalogIndexNeverOverridesLiveSessions(t *testing.T) {
	f := newCatFix(t)
	f.liveChild(childHeader("creating", "p", 1), "")
	f.author(childHeader("creating", "p", 1), childEvents(descPayload("stale", 2)))
	f.cat.Index = &fakeIndex{disk: f.disk, ignoreSkip: true, values: map[string]map[string]json.RawMessage{"creating": identityValues("stale")}}
	if rows := listChildren(t, f.cat, "p"); len(rows) != 0 {
		t.Fatalf("creation-window child listed from the index: %+v", rows)
	}
}

// A live child skipped by the scan that settles before the live list is
// taken is still listed: the scan is repeated in full.
func TestCatalogIndexRescansWhenALiveChildSettles(t *testing.T) {
	f := newCatFix(t)
	s := f.runChild(childHeader("moving", "p", 1), "moving child")
	f.settledChild(childHeader("cold", "p", 2), "cold child")
	x := &fakeIndex{disk: f.disk}
	x.hook = func(scan int64) {
		if scan == 1 {
			f.settle(s)
		}
	}
	f.cat.Index = x
	wantJSON(t, listChildren(t, f.cat, "p"), `[
		{"kind":"child","id":"moving","mode":"continuable","label":"moving child","activity":"inactive","hasChildren":false},
		{"kind":"child","id":"cold","mode":"continuable","label":"cold child","activity":"inactive","hasChildren":false}]`)
	if x.scans.Load() != 2 {
		t.Fatalf("%d scans; want 2", x.scans.Load())
	}
	// Nothing moves: one scan per listing.
	listChildren(t, f.cat, "p")
	if x.scans.Load() != 3 {
		t.Fatalf("%d scans; want 3", x.scans.Load())
	}
}
