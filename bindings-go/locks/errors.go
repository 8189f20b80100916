package locks

// #include "leasehold.h"
import "C"

import (
	"context"
	"errors"
)

// Code is the stable code of a failure, the same in every language (ERR-01).
type Code string

// The codes of ERR-01, as docs/errors.md lists them.
const (
	CodeLost              Code = "Lost"
	CodeInvalidTTL        Code = "InvalidTtl"
	CodeEmptyName         Code = "EmptyName"
	CodePermissionDenied  Code = "PermissionDenied"
	CodeUnauthenticated   Code = "Unauthenticated"
	CodeWaitTimeout       Code = "WaitTimeout"
	CodeCancelled         Code = "Cancelled"
	CodeUnavailable       Code = "Unavailable"
	CodeTimeout           Code = "Timeout"
	CodeNamespaceMismatch Code = "NamespaceMismatch"
	CodeProtocol          Code = "Protocol"
	CodeInternal          Code = "Internal"
	CodeInvalidArgument   Code = "InvalidArgument"
	CodeClosed            Code = "Closed"
	CodeNotReady          Code = "NotReady"
	CodeOverflow          Code = "Overflow"
)

// The sentinels: every error of this package errors.Is the sentinel of its code.
var (
	// ErrLost: the lease is gone (ran out, revoked at maxHold, released
	// elsewhere, store restarted or closed).
	ErrLost = newSentinel(CodeLost)
	// ErrInvalidTTL: a ttl, maxHold, margin, wait or extension out of range.
	ErrInvalidTTL = newSentinel(CodeInvalidTTL)
	// ErrEmptyName: an empty lock name, key or lease name.
	ErrEmptyName = newSentinel(CodeEmptyName)
	// ErrPermissionDenied: a read-only connection asked to hold (LOCK-14).
	ErrPermissionDenied = newSentinel(CodePermissionDenied)
	// ErrUnauthenticated: no valid credentials at connect (LOCK-14).
	ErrUnauthenticated = newSentinel(CodeUnauthenticated)
	// ErrWaitTimeout: a hold or lock spent its wait in line (LOCK-18).
	ErrWaitTimeout = newSentinel(CodeWaitTimeout)
	// ErrCancelled: the ctx of a waiting call ended; the call left the line.
	ErrCancelled = newSentinel(CodeCancelled)
	// ErrUnavailable: the store cannot be reached, or a key's line is full; retryable.
	ErrUnavailable = newSentinel(CodeUnavailable)
	// ErrTimeout: a store operation took too long; its outcome is unknown.
	ErrTimeout = newSentinel(CodeTimeout)
	// ErrNamespaceMismatch: a slot namespace opened with other parameters.
	ErrNamespaceMismatch = newSentinel(CodeNamespaceMismatch)
	// ErrProtocol: a malformed, oversized or hostile frame.
	ErrProtocol = newSentinel(CodeProtocol)
	// ErrInternal: a bug in Leasehold.
	ErrInternal = newSentinel(CodeInternal)
	// ErrInvalidArgument: an argument not of the form the call takes
	// (invalid UTF-8, a name over 1024 bytes, an option the call does not take).
	ErrInvalidArgument = newSentinel(CodeInvalidArgument)
	// ErrClosed: a call on a closed store or a freed object.
	ErrClosed = newSentinel(CodeClosed)
	// ErrNotReady: nothing can be issued yet (an ID generator); retryable.
	ErrNotReady = newSentinel(CodeNotReady)
	// ErrOverflow: a range is used up for good (an ID layout's time bits).
	ErrOverflow = newSentinel(CodeOverflow)
)

// codes are the Go codes of the C ABI's lh_code numbers (LH_LOST = 1, …).
var codes = [...]Code{
	1: CodeLost, 2: CodeInvalidTTL, 3: CodeEmptyName, 4: CodePermissionDenied,
	5: CodeUnauthenticated, 6: CodeWaitTimeout, 7: CodeCancelled, 8: CodeUnavailable,
	9: CodeTimeout, 10: CodeNamespaceMismatch, 11: CodeProtocol, 12: CodeInternal,
	13: CodeInvalidArgument, 14: CodeClosed, 15: CodeNotReady, 16: CodeOverflow,
}

var sentinels = map[Code]error{
	CodeLost: ErrLost, CodeInvalidTTL: ErrInvalidTTL, CodeEmptyName: ErrEmptyName,
	CodePermissionDenied: ErrPermissionDenied, CodeUnauthenticated: ErrUnauthenticated,
	CodeWaitTimeout: ErrWaitTimeout, CodeCancelled: ErrCancelled, CodeUnavailable: ErrUnavailable,
	CodeTimeout: ErrTimeout, CodeNamespaceMismatch: ErrNamespaceMismatch, CodeProtocol: ErrProtocol,
	CodeInternal: ErrInternal, CodeInvalidArgument: ErrInvalidArgument, CodeClosed: ErrClosed,
	CodeNotReady: ErrNotReady, CodeOverflow: ErrOverflow,
}

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
