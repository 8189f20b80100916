package locks

// #include "leasehold.h"
import "C"

import (
	"context"
	"fmt"
	"time"
	"unsafe"
)

func init() {
	if v := C.lh_abi_version(); v != C.LH_ABI_VERSION {
		panic(fmt.Sprintf("locks: the linked leasehold library has ABI version %d, this package needs %d: rebuild it (docs/go.md)", v, C.LH_ABI_VERSION))
	}
}

// cstr passes a Go string to C for the duration of one call, as pointer +
// length (the library copies it before returning).
func cstr(s string) (*C.uint8_t, C.size_t) {
	if len(s) == 0 {
		return nil, 0
	}
	return (*C.uint8_t)(unsafe.Pointer(unsafe.StringData(s))), C.size_t(len(s))
}

// cbytes is cstr for a byte slice.
func cbytes(b []byte) (*C.uint8_t, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(b))), C.size_t(len(b))
}

// nanos is a duration as the C ABI takes it.
func nanos(d time.Duration) C.int64_t { return C.int64_t(d.Nanoseconds()) }

// withCancel runs a blocking C call that takes a cancellation token (one
// round trip to the store, such as a manual lease's extend), firing the
// token when ctx ends (context.AfterFunc), so that the call gives up. A
// ctx that cannot end costs nothing. Calls that wait in line use startCall.
func withCancel(ctx context.Context, call func(C.lh_cancel) *C.lh_error) error {
	if ctx == nil {
		return newError(CodeInvalidArgument, "a nil context.Context")
	}
	if ctx.Done() == nil {
		return takeError(call(C.lh_cancel{}))
	}
	if ctx.Err() != nil {
		return withCause(ctx, newError(CodeCancelled, "the context ended before the call"))
	}
	var token C.lh_cancel
	if err := takeError(C.lh_cancel_new(&token)); err != nil {
		return err
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		C.lh_error_free(C.lh_cancel_fire(token))
		close(fired)
	})
	err := takeError(call(token))
	if !stop() {
		<-fired
	}
	C.lh_error_free(C.lh_cancel_free(token))
	return withCause(ctx, err)
}
