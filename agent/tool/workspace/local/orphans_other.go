//go:build !linux

package local

import "errors"

// AdoptOrphans: there is no child subreaper here.
func AdoptOrphans() (stop func(), err error) {
	return func() {}, errors.New("no child subreaper on this system")
}
