package locks

// #include "leasehold.h"
import "C"

import (
	"context"
	"errors"
)

// Code is the stable code of a failure, the same in every language (ERR-01).
type Code string

//go:generate go run ../cmd/gencodes -header ../../ffi/include/leasehold.h -out codes.go

// IsTimeout says whether err is, or wraps, a store timeout (ErrTimeout,
// SLOT-07): the store did not answer in time and the outcome is unknown.
// Outcomes are not timeouts: an exhausted namespace is Acquire's false, a
// NamespaceMismatch has its own code.
func IsTimeout(err error) bool { return errors.Is(err, ErrTimeout) }

// Sentinel is the sentinel of code, or nil for a code this package does not know.
func (c Code) Sentinel() error { return sentinels[c] }

type sentinel struct{ code Code }

func newSentinel(c Code) error { return &sentinel{c} }

func (s *sentinel) Error() string { return "leasehold: " + string(s.code) }

// LossReason says why a lease was lost.
type LossReason string

// The reasons a lease is lost.
const (
	NotLost   LossReason = ""
	Expired   LossReason = "expired"   // its ttl ran out before a renewal was confirmed
	Revoked   LossReason = "revoked"   // the store revoked it at its maxHold (LOCK-12)
	Unknown   LossReason = "unknown"   // the store no longer knows it (released elsewhere)
	Restarted LossReason = "restarted" // the store restarted and holds no lease from before
	Closed    LossReason = "closed"    // the store was closed while it was held
)

// reasonCodes are the C codes of the loss reasons.
var reasonCodes = map[LossReason]C.lh_loss_reason{
	Expired: C.LH_REASON_EXPIRED, Revoked: C.LH_REASON_REVOKED, Unknown: C.LH_REASON_UNKNOWN,
	Restarted: C.LH_REASON_RESTARTED, Closed: C.LH_REASON_CLOSED,
}

func reasonOf(r C.lh_loss_reason) LossReason {
	switch r {
	case C.LH_REASON_EXPIRED:
		return Expired
	case C.LH_REASON_REVOKED:
		return Revoked
	case C.LH_REASON_UNKNOWN:
		return Unknown
	case C.LH_REASON_RESTARTED:
		return Restarted
	case C.LH_REASON_CLOSED:
		return Closed
	}
	return NotLost
}

// Error is every failure of this package: a stable Code, a message, the
// loss reason of a Lost error, and the error that caused it, if any (the
// held function's own error after a loss, LOCK-10; the ctx's cause for
// Cancelled). It errors.Is the sentinel of its code, and its cause.
type Error struct {
	Code    Code
	Message string
	Reason  LossReason
	cause   error
}

func (e *Error) Error() string {
	s := "leasehold: " + string(e.Code) + ": " + e.Message
	if e.cause != nil {
		s += ": " + e.cause.Error()
	}
	return s
}

// Unwrap answers the cause: the held function's own error, or the ctx's.
func (e *Error) Unwrap() error { return e.cause }

// Is says whether target is the sentinel of e's code.
func (e *Error) Is(target error) bool {
	s, ok := target.(*sentinel)
	return ok && s.code == e.Code
}

// takeError turns a C error object into an *Error and frees it; nil for NULL.
func takeError(e *C.lh_error) error {
	if e == nil {
		return nil
	}
	defer C.lh_error_free(e)
	code := CodeInternal
	if n := int(C.lh_error_code(e)); n > 0 && n < len(codes) {
		code = codes[n]
	}
	return &Error{
		Code:    code,
		Message: C.GoString(C.lh_error_message(e)),
		Reason:  reasonOf(C.lh_error_loss_reason(e)),
	}
}

// newError is an *Error made on the Go side (an argument refused before any C call).
func newError(code Code, message string) error {
	return &Error{Code: code, Message: message}
}

// withCause sets the cause of a Cancelled error to the ctx's own cause,
// so that errors.Is(err, context.Canceled) or context.DeadlineExceeded holds too.
func withCause(ctx context.Context, err error) error {
	if e, ok := err.(*Error); ok && e.Code == CodeCancelled && e.cause == nil {
		e.cause = context.Cause(ctx)
	}
	return err
}
