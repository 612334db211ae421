package errcode

import (
	"errors"
	"fmt"
	"testing"
)

type codeA string
type codeB string

// wrapped embeds Coded the way a package with a richer error does.
type wrapped struct {
	Coded[codeA]
	Extra string
}

func TestCodedMatchesByCodeAndType(t *testing.T) {
	cause := errors.New("disk full")
	a := Errorf(codeA("X"), "write failed: %w", cause)
	w := &wrapped{Coded: Coded[codeA]{Code: "X", Message: "rich"}}
	tests := []struct {
		name   string
		err    error
		target error
		want   bool
	}{
		{"same code", a, New(codeA("X"), ""), true},
		{"other code", a, New(codeA("Y"), ""), false},
		{"same spelling, other code type", a, New(codeB("X"), ""), false},
		{"wrapped with %w", fmt.Errorf("ctx: %w", a), New(codeA("X"), ""), true},
		{"embedding target", a, &wrapped{Coded: Coded[codeA]{Code: "X"}}, true},
		{"embedding error", w, New(codeA("X"), ""), true},
		{"cause reachable", a, cause, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errors.Is(tt.err, tt.target); got != tt.want {
				t.Fatalf("errors.Is = %v, want %v", got, tt.want)
			}
		})
	}
	if a.Error() != "write failed: disk full" || a.ErrorCode() != "X" {
		t.Fatalf("Error() %q ErrorCode() %q", a.Error(), a.ErrorCode())
	}
	if !Has(fmt.Errorf("ctx: %w", w), codeA("X")) || Has(w, codeA("Y")) || Has(a, codeB("X")) {
		t.Fatal("Has does not match by code type and code")
	}
}
