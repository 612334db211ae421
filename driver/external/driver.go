package external

// This file is the "external" driver: the name children of external agent
// definitions start through (recorded as their descriptor's provider, so
// the listings say what runs them). A child starts like a spawned one —
// its own session, no inherited history —; what makes it external is its
// agent, which the composition root's factory builds from the child's
// definition record (command and arguments), also on a cold resume.

import (
	"github.com/acp-agent/acp-agent/driver"
	"github.com/acp-agent/acp-agent/driver/inprocess"
)

// DriverName is the external driver's name.
const DriverName = "external"

// Driver starts the children of external agent definitions.
type Driver struct{ *inprocess.Provider }

var _ driver.Continuable = Driver{}

// NewDriver returns the external driver.
func NewDriver() Driver { return Driver{inprocess.Spawn()} }

// Name is DriverName.
func (Driver) Name() string { return DriverName }

// InheritsParentContext is false: the external agent starts empty.
func (Driver) InheritsParentContext() bool { return false }
