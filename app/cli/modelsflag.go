package cli

import (
	"fmt"
	"strings"
)

// modelsFlag is the repeatable --model flag. Its first use on a command
// line replaces the inherited value (environment or root flags); each
// further use adds a model. Flags.Model holds the list comma-separated.
type modelsFlag struct {
	f   *Flags
	set bool
}

func (m *modelsFlag) String() string {
	if m == nil || m.f == nil {
		return ""
	}
	return m.f.Model
}

func (m *modelsFlag) Set(v string) error {
	v = strings.TrimSpace(v)
	if v == "" {
		return fmt.Errorf("empty model")
	}
	if !m.set || m.f.Model == "" {
		m.f.Model, m.set = v, true
		return nil
	}
	m.f.Model += "," + v
	return nil
}
