package errcode

import (
	"errors"
	"fmt"
)

// Coded is a typed failure with a stable code of type C. Error returns
// Message; Unwrap returns Err.
type Coded[C ~string] struct {
	Code    C
	Message string
	Err     error
}

// New returns a *Coded with the given code and message.
func New[C ~string](code C, message string) *Coded[C] {
	return &Coded[C]{Code: code, Message: message}
}

// Errorf returns a *Coded whose message is formatted; a %w verb also
// becomes its cause.
func Errorf[C ~string](code C, format string, args ...any) *Coded[C] {
	err := fmt.Errorf(format, args...)
	return &Coded[C]{Code: code, Message: err.Error(), Err: errors.Unwrap(err)}
}

func (e *Coded[C]) Error() string { return e.Message }

// Unwrap returns the cause, if any.
func (e *Coded[C]) Unwrap() error { return e.Err }

// ErrorCode returns the stable code as a string (the form other packages'
// error mappings read without knowing C).
func (e *Coded[C]) ErrorCode() string { return string(e.Code) }

// Is matches a target of the same code type with the same code, so
// errors.Is(err, &T{Code: X}) tests by code alone. A target that embeds
// Coded[C] (such as subagent.SubagentError) matches too.
func (e *Coded[C]) Is(target error) bool {
	t, ok := target.(interface{ coded() *Coded[C] })
	return ok && t.coded() != nil && t.coded().Code == e.Code
}

// coded lets Is see the Coded inside a type that embeds it.
func (e *Coded[C]) coded() *Coded[C] { return e }

// Has reports whether err is or wraps a typed error of code type C with
// the given code.
func Has[C ~string](err error, code C) bool {
	var t interface {
		error
		coded() *Coded[C]
	}
	return errors.As(err, &t) && t.coded().Code == code
}
