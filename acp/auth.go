package acp

// This file defines authentication: the env_var auth methods initialize
// advertises when a configured model's API key is missing, the
// AUTH_REQUIRED refusal of prompts until it is set, and authenticate,
// which has the composition read the environment again.

import (
	"context"
	"errors"

	acpsdk "github.com/coder/acp-go-sdk"
)

// AuthMethod is one env_var authentication method: the client sets the
// variables in the agent's environment (restarting it) and calls
// authenticate with ID.
type AuthMethod struct {
	ID          string
	Name        string
	Description string
	// Vars are the environment variables to set (all secrets).
	Vars []string
}

// Authenticator is the credentials state of the configured models
// (Options.Auth). Its methods must be safe for concurrent use.
type Authenticator interface {
	// AuthMethods lists the methods to advertise in initialize.
	AuthMethods() []AuthMethod
	// Ready returns nil when the model modelID ("" for the default) has
	// its credentials, else an error naming what is missing.
	Ready(modelID string) error
	// Authenticate reads the credentials of method methodID again. It
	// returns an error matching ErrUnknownAuthMethod for an id it does not
	// know, and the Ready error when they are still missing.
	Authenticate(ctx context.Context, methodID string) error
}

// authMethods converts the advertised methods to the SDK's shape; never
// nil, so initialize always carries authMethods.
func (s *Server) authMethods() []acpsdk.AuthMethod {
	out := []acpsdk.AuthMethod{}
	if s.opts.Auth == nil {
		return out
	}
	for _, m := range s.opts.Auth.AuthMethods() {
		vars := make([]acpsdk.AuthEnvVar, len(m.Vars))
		for i, v := range m.Vars {
			vars[i] = acpsdk.AuthEnvVar{Name: v, Label: acpsdk.Ptr(v), Secret: true}
		}
		em := &acpsdk.AuthMethodEnvVarInline{Id: m.ID, Name: m.Name, Type: "env_var", Vars: vars}
		if m.Description != "" {
			em.Description = acpsdk.Ptr(m.Description)
		}
		out = append(out, acpsdk.AuthMethod{EnvVar: em})
	}
	return out
}

// authReady refuses a prompt of session id whose model lacks credentials.
func (s *Server) authReady(id string) error {
	if s.opts.Auth == nil {
		return nil
	}
	if err := s.opts.Auth.Ready(s.SessionModel(id)); err != nil {
		return &Error{Code: CodeAuthRequired, Message: err.Error(), Err: err}
	}
	return nil
}

// Authenticate reads the credentials of the chosen method again (the
// client restarted the agent with the variables set, or set them).
// Without an Authenticator no methods are advertised and it answers
// -32601.
func (s *Server) Authenticate(ctx context.Context, p acpsdk.AuthenticateRequest) (resp acpsdk.AuthenticateResponse, err error) {
	defer s.recoverTo("authenticate", &err)
	if s.opts.Auth == nil {
		return resp, acpsdk.NewMethodNotFound(acpsdk.AgentMethodAuthenticate)
	}
	if err := s.opts.Auth.Authenticate(ctx, p.MethodId); err != nil {
		if isUnknownAuthMethod(err) {
			return resp, toRequestError(&Error{Code: CodeInvalidParams, Message: "unknown auth method: " + p.MethodId, Err: err})
		}
		return resp, toRequestError(&Error{Code: CodeAuthRequired, Message: err.Error(), Err: err})
	}
	s.log.Info("authenticated", "method", p.MethodId)
	return resp, nil
}

// ErrUnknownAuthMethod is wrapped by an Authenticator for a method id it
// does not know.
var ErrUnknownAuthMethod = errors.New("unknown auth method")

func isUnknownAuthMethod(err error) bool { return errors.Is(err, ErrUnknownAuthMethod) }
