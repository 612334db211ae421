package model

// This file defines the configuration error every provider shares, so the
// command line can tell a mistake in the flags (exit status 2) from a
// failure, and print the message without a package prefix.

import (
	"errors"
	"fmt"
)

// ErrBadConfig matches (errors.Is) a model configuration that cannot work
// as given: an unknown provider, a malformed model spec or base URL.
var ErrBadConfig = errors.New("bad model configuration")

// ConfigError is a configuration mistake. Message is for people (it names
// the flag or value and what would work); Err is the provider's sentinel.
type ConfigError struct {
	Err     error
	Message string
}

// ConfigErrorf returns a ConfigError wrapping sentinel.
func ConfigErrorf(sentinel error, format string, args ...any) *ConfigError {
	return &ConfigError{Err: sentinel, Message: fmt.Sprintf(format, args...)}
}

func (e *ConfigError) Error() string { return e.Message }

// Unwrap returns the provider's sentinel.
func (e *ConfigError) Unwrap() error { return e.Err }

// Is reports whether target is ErrBadConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrBadConfig }
