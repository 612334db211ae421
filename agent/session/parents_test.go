package session

import (
	"maps"
	"testing"
)

func TestCorruptParents(t *testing.T) {
	tests := []struct {
		name     string
		parentOf map[string]string
		want     map[string]string
	}{
		{"none", map[string]string{"a": "", "b": "a", "c": "b", "d": "missing"}, map[string]string{}},
		{"self", map[string]string{"a": "a", "b": "a"}, map[string]string{"a": "names itself as its parent"}},
		{"2-cycle", map[string]string{"b": "a", "a": "b", "c": "a"},
			map[string]string{"a": "parent cycle a → b → a", "b": "parent cycle a → b → a"}},
		{"3-cycle", map[string]string{"z": "x", "x": "y", "y": "z"},
			map[string]string{"x": "parent cycle x → y → z → x", "y": "parent cycle x → y → z → x", "z": "parent cycle x → y → z → x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CorruptParents(tt.parentOf); !maps.Equal(got, tt.want) {
				t.Errorf("CorruptParents = %v, want %v", got, tt.want)
			}
		})
	}
}
