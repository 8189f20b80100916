package locks

// #include "leasehold.h"
import "C"

import (
	"runtime/cgo"
)

// leaseholdLost is the lh_lost_fn of every hold: the library calls it,
// from one of its own threads, once when a held lease or slot is lost, with
// the cgo.Handle of the hold's waiter (C never holds a Go pointer), which
// names the held function's ctx until the hold ended.
//
//export leaseholdLost
func leaseholdLost(user C.uint64_t, reason C.lh_loss_reason) {
	w, ok := cgo.Handle(user).Value().(*waiter)
	if !ok {
		return
	}
	c := w.held.Load()
	if c == nil {
		return
	}
	r := reasonOf(reason)
	c.lose(&Error{Code: CodeLost, Message: "the " + c.what + " was lost (" + string(r) + ")", Reason: r})
}
