package model

// This file defines the credential errors every provider shares, so that
// the composition root can start without a key and the ACP layer can ask
// for it (an env_var auth method) instead of failing at start-up.

import (
	"errors"
	"fmt"
)

// ErrAuthRequired matches (errors.Is) a model that cannot serve requests
// until its credentials are provided.
var ErrAuthRequired = errors.New("authentication required")

// MissingKeyError reports a provider whose API key is not set. EnvVar names
// the environment variable the key is read from. It matches
// ErrAuthRequired, and unwraps to the provider's own sentinel (Err), if any.
type MissingKeyError struct {
	Provider string
	EnvVar   string
	Err      error
}

func (e *MissingKeyError) Error() string {
	return fmt.Sprintf("provider %s needs an API key: set the environment variable %s and restart the agent (or name another variable with --api-key-env)", e.Provider, e.EnvVar)
}

// Unwrap returns the provider's sentinel.
func (e *MissingKeyError) Unwrap() error { return e.Err }

// Is reports whether target is ErrAuthRequired.
func (e *MissingKeyError) Is(target error) bool { return target == ErrAuthRequired }
