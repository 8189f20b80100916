package locks

/*
#include <errno.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include "leasehold.h"

extern void leaseholdDone(uint64_t user, lh_outcome outcome);

// Who waits for a call's outcome.
enum { LH_GO_PENDING, LH_GO_IN_C, LH_GO_IN_GO, LH_GO_DONE };

// A waiter's slot, in C memory (C never holds a Go pointer): the outcome
// of its call that went on, who waits for it, and the semaphore a
// goroutine waiting in C sleeps on.
typedef struct {
	_Atomic int state;
	uint64_t handle; // the waiter's cgo.Handle, for leaseholdDone
	lh_outcome outcome;
	sem_t sem;
} leasehold_go_slot;

leasehold_go_slot *leasehold_go_slot_new(uint64_t handle) {
	leasehold_go_slot *s = calloc(1, sizeof *s);
	if (s == NULL) return NULL;
	if (sem_init(&s->sem, 0, 0) != 0) {
		free(s);
		return NULL;
	}
	s->handle = handle;
	return s;
}

void leasehold_go_slot_free(leasehold_go_slot *s) {
	sem_destroy(&s->sem);
	free(s);
}

// The lh_done_fn of every call that may wait: the outcome goes to the
// slot, then to whoever waits: a thread sleeping in leasehold_go_wait is
// woken, a goroutine waiting on its channel gets it through leaseholdDone,
// and one that has not decided yet finds it there.
void leasehold_go_done(uint64_t user, lh_outcome outcome) {
	leasehold_go_slot *s = (leasehold_go_slot *)(uintptr_t)user;
	s->outcome = outcome;
	int was = atomic_exchange(&s->state, LH_GO_DONE);
	if (was == LH_GO_IN_C) {
		sem_post(&s->sem);
	} else if (was == LH_GO_IN_GO) {
		leaseholdDone(s->handle, outcome);
	}
}

lh_done_fn leasehold_go_done_fn(void) { return leasehold_go_done; }

// Waits in C, at most ns nanoseconds, for the outcome: 1 when it is in
// the slot, 0 when the wait moved to the waiter's channel (the outcome
// then comes through leaseholdDone). The slot is ready for the next call
// when this answers 1.
int leasehold_go_wait(leasehold_go_slot *s, int64_t ns) {
	int expected = LH_GO_PENDING;
	if (!atomic_compare_exchange_strong(&s->state, &expected, LH_GO_IN_C)) {
		atomic_store(&s->state, LH_GO_PENDING);
		return 1;
	}
	struct timespec at;
	clock_gettime(CLOCK_REALTIME, &at);
	at.tv_sec += ns / 1000000000;
	at.tv_nsec += ns % 1000000000;
	if (at.tv_nsec >= 1000000000) {
		at.tv_sec++;
		at.tv_nsec -= 1000000000;
	}
	for (;;) {
		if (sem_timedwait(&s->sem, &at) == 0) {
			atomic_store(&s->state, LH_GO_PENDING);
			return 1;
		}
		if (errno != EINTR) break;
	}
	expected = LH_GO_IN_C;
	if (atomic_compare_exchange_strong(&s->state, &expected, LH_GO_IN_GO)) return 0;
	// The outcome came meanwhile: its post is this wait's.
	while (sem_wait(&s->sem) != 0) {
	}
	atomic_store(&s->state, LH_GO_PENDING);
	return 1;
}

// Moves the wait to the waiter's channel: 0, or 1 when the outcome is in
// the slot already (and the slot is ready for the next call).
int leasehold_go_to_channel(leasehold_go_slot *s) {
	int expected = LH_GO_PENDING;
	if (atomic_compare_exchange_strong(&s->state, &expected, LH_GO_IN_GO)) return 0;
	atomic_store(&s->state, LH_GO_PENDING);
	return 1;
}

// The slot is ready for the next call (after an outcome that came through the channel).
void leasehold_go_reset(leasehold_go_slot *s) { atomic_store(&s->state, LH_GO_PENDING); }

lh_outcome leasehold_go_outcome(leasehold_go_slot *s) { return s->outcome; }
*/
import "C"

import (
	"runtime/cgo"
	"sync/atomic"
	"time"
	"unsafe"
)

// doneFn is the lh_done_fn of every call that may wait (leasehold_go_done):
// its user value is the waiter's slot, in C memory.
var doneFn = C.leasehold_go_done_fn()

// How a goroutine waits for a call that went on. On the server store
// every call waits for an answer; a goroutine parked on a channel is woken
// through a callback into Go from the library's thread and the scheduler's
// wake of another thread, which cost tens of microseconds a wait on a
// small machine (docs/benchmarks.md), against a thread's own wake-up. So
// up to maxWaitingInC goroutines at a time first wait in C, blocking their
// thread, for at most waitInC (a ctx that ends meanwhile fires the call's
// token, which ends the call and the wait); the others, and those whose
// wait runs longer (a call in line), wait on their channel, holding no
// thread. The waits in C thus hold at most maxWaitingInC threads, for a
// short time each.
const (
	maxWaitingInC = 2
	waitInC       = 2 * time.Millisecond
)

// waitingInC counts the goroutines waiting in C now.
var waitingInC atomic.Int32

// slot is a waiter's C slot.
type slot struct{ s *C.leasehold_go_slot }

// newSlot makes the slot of the waiter whose handle is h.
func newSlot(h cgo.Handle) slot {
	s := C.leasehold_go_slot_new(C.uint64_t(h))
	if s == nil {
		panic("locks: out of memory")
	}
	return slot{s}
}

// free frees the slot (its waiter is let go).
func (s slot) free() { C.leasehold_go_slot_free(s.s) }

// user is the slot as the user value of leasehold_go_done.
func (s slot) user() C.uint64_t { return C.uint64_t(uintptr(unsafe.Pointer(s.s))) }

// waitInC waits in C for the outcome when a place to wait there is free:
// the outcome and true; false when the wait moved to the channel (no place
// was free, or the wait in C ran out), where leaseholdDone puts it.
func (s slot) waitInC() (C.lh_outcome, bool) {
	if waitingInC.Add(1) > maxWaitingInC {
		waitingInC.Add(-1)
		return s.toChannel()
	}
	got := C.leasehold_go_wait(s.s, C.int64_t(waitInC)) != 0
	waitingInC.Add(-1)
	if !got {
		return C.lh_outcome{}, false
	}
	return C.leasehold_go_outcome(s.s), true
}

// toChannel moves the wait to the channel: the outcome and true when it
// came already, else false.
func (s slot) toChannel() (C.lh_outcome, bool) {
	if C.leasehold_go_to_channel(s.s) == 0 {
		return C.lh_outcome{}, false
	}
	return C.leasehold_go_outcome(s.s), true
}

// reset makes the slot ready for the next call, after an outcome that came through the channel.
func (s slot) reset() { C.leasehold_go_reset(s.s) }
