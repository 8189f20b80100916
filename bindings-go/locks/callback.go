package locks

// #include "leasehold.h"
import "C"

import (
	"runtime/cgo"
)

// leaseholdLost is the lh_lost_fn of every hold: the library calls it,
// from one of its own threads, once when a held lease or slot is lost, with
// the cgo.Handle of the hold's lossWatch (C never holds a Go pointer).
//
//export leaseholdLost
func leaseholdLost(user C.uint64_t, reason C.lh_loss_reason) {
	w, ok := cgo.Handle(user).Value().(*lossWatch)
	if !ok {
		return
	}
	r := reasonOf(reason)
	w.cancel(&Error{Code: CodeLost, Message: "the " + w.what + " was lost (" + string(r) + ")", Reason: r})
}
