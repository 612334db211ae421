package readonly

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
)

func TestRefuse(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reason   Reason
		wantCode string
		wantIn   []string
	}{
		{"subagent session", Reason{ID: "s1"}, CodeReadOnly, []string{"session s1 is a subagent session: it can be loaded for viewing but not prompted"}},
		{"damaged log", Reason{ID: "s2", Damage: "bad line 7"}, CodeDamaged, []string{"session s2 cannot be prompted", "(bad line 7)", "acp-agent sessions repair s2"}},
		{"damaged subagent session: the damage decides", Reason{ID: "s3", Damage: "bad line 2"}, CodeDamaged, []string{"cannot be prompted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.reason.Refuse("prompted", "it can be loaded for viewing but not prompted")
			if r.Code != tc.wantCode {
				t.Fatalf("code %s, want %s", r.Code, tc.wantCode)
			}
			for _, w := range tc.wantIn {
				if !strings.Contains(r.Message, w) {
					t.Errorf("message %q lacks %q", r.Message, w)
				}
			}
		})
	}
}

func TestNotices(t *testing.T) {
	if n := DamagedNotice("s", "bad line 3", true); !strings.HasPrefix(n, "This subagent session's log is damaged (bad line 3)") || !strings.Contains(n, "acp-agent sessions repair s") {
		t.Errorf("child notice %q", n)
	}
	if n := DamagedNotice("s", "bad line 3", false); !strings.HasPrefix(n, "This session's log is damaged") {
		t.Errorf("notice %q", n)
	}
	if n := NotWholeNotice(""); n != "" {
		t.Errorf("a whole log has a notice: %q", n)
	}
	if n := NotWholeNotice("3 lines were cut"); n != "This session's history is not whole: 3 lines were cut.\n\n" {
		t.Errorf("notice %q", n)
	}
}

type codedErr string

func (c codedErr) Error() string     { return string(c) }
func (c codedErr) ErrorCode() string { return string(c) }

// fakeReader is a store with one damaged log.
type fakeReader struct {
	damage string
	err    error
	calls  int
}

func (f *fakeReader) InspectValid(_ context.Context, id string) (session.Header, []session.Event, string, error) {
	f.calls++
	return session.Header{ID: id}, []session.Event{{Type: session.TypeTurnStart}}, f.damage, f.err
}

func TestValidPart(t *testing.T) {
	corrupt := fmt.Errorf("load: %w", codedErr(CodeCorrupt))
	for _, tc := range []struct {
		name    string
		reader  *fakeReader
		readErr error
		wantOK  bool
		reads   int
	}{
		{"damaged log with a valid part", &fakeReader{damage: "bad line 4"}, corrupt, true, 1},
		{"another failure is not opened", &fakeReader{damage: "bad line 4"}, errors.New("permission denied"), false, 0},
		{"another code is not opened", &fakeReader{damage: "bad line 4"}, codedErr("SESSION_LOCKED"), false, 0},
		{"no damage found on a second look", &fakeReader{}, corrupt, false, 1},
		{"the valid part cannot be read", &fakeReader{damage: "x", err: errors.New("gone")}, corrupt, false, 1},
		{"no reader", nil, corrupt, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var vr ValidPartReader
			if tc.reader != nil {
				vr = tc.reader
			}
			h, events, damage, ok := ValidPart(context.Background(), vr, "s", tc.readErr)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if ok && (h.ID != "s" || len(events) != 1 || damage != tc.reader.damage) {
				t.Fatalf("got %v %v %q", h, events, damage)
			}
			if !ok && (events != nil || damage != "") {
				t.Fatalf("a refused read returned %v %q", events, damage)
			}
			if tc.reader != nil && tc.reader.calls != tc.reads {
				t.Fatalf("%d reads, want %d", tc.reader.calls, tc.reads)
			}
		})
	}
}
