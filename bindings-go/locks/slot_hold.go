package locks

// #include "leasehold.h"
import "C"

import (
	"context"
	"runtime"
	"time"
)

// HeldSlotFunc is the function Slots.Hold runs while it holds a slot. Its
// ctx is cancelled with cause ErrLost (errors.Is(context.Cause(ctx),
// ErrLost)) when the slot is lost.
type HeldSlotFunc func(ctx context.Context, held *HeldSlot) error

// Hold acquires a slot for owner as Acquire does (SLOT-01; the option
// Preferred) and runs fn holding it: the core renews the slot every TTL/3
// while fn runs, and releases it when fn returns, fails or panics, handing
// the largest timestamp fn recorded with held.Issued to the slot's next
// holder as its floor (SLOT-05). When every slot is held it answers
// (false, nil) and fn does not run.
//
// The slot is lost when a renewal answers nothing (another owner has it)
// or none is confirmed by the holder's deadline (the send time of the last
// confirmed call + TTL − Margin): fn's ctx is cancelled with cause ErrLost,
// and Hold fails ErrLost even if fn succeeded, fn's own error staying
// reachable with errors.Is / errors.As (as Lock.Hold does, LOCK-09,
// LOCK-10). Acquiring fails ErrTimeout past the namespace's Timeout, and
// ErrCancelled when ctx ends first (then fn does not run).
func (s *Slots) Hold(ctx context.Context, owner Owner, fn HeldSlotFunc, opts ...Option) (bool, error) {
	// The namespace, and so its store, stay alive (no finalizer closes them) until the hold ended.
	defer runtime.KeepAlive(s)
	if fn == nil {
		return false, newError(CodeInvalidArgument, "Slots.Hold: a nil function")
	}
	hasPreferred, preferred, err := preferredSlot("Slots.Hold", opts)
	if err != nil {
		return false, err
	}
	p := startCall(ctx)
	k, kn := cstr(owner.key)
	i, in := cstr(owner.instance)
	o, err := p.wait(p.ready() && bool(C.lh_slots_begin_async(s.h, k, kn, i, in, hasPreferred, preferred, p.token, doneFn, p.user(), p.now())))
	runtime.KeepAlive(owner)
	if err != nil || !bool(o.held) {
		return false, err
	}
	slot := newHeldSlot(C.lh_slot_holding{id: C.uint64_t(o.handle)}, s.name, owner)
	return true, slot.kept.run(ctx, func(ctx context.Context) error { return fn(ctx, slot) })
}

// HeldSlot is a slot held by Slots.Hold, as its function sees it: the
// lease as last renewed (the fence stays; the expiry and the ceiling move
// on), and the timestamps issued under it. Times are milliseconds since
// the Unix epoch on the store's clock. Safe for concurrent use; once Hold
// returned, it tells the slot as it was at the end.
type HeldSlot struct {
	kept      kept[C.lh_held_slot_info, slotHold]
	h         C.lh_slot_holding
	namespace string
	owner     Owner
	lease     *SlotLease // the last lease handed out, kept while the store's lease is the same; under kept.mu
}

// slotHold is a slot's C holding, as kept uses it.
type slotHold struct{ h C.lh_slot_holding }

func (slotHold) what() string { return "slot" }

func (s slotHold) info(info *C.lh_held_slot_info) *C.lh_error {
	return C.lh_slot_holding_info(s.h, info)
}

func (s slotHold) onLost(callback C.lh_lost_fn, user C.uint64_t) *C.lh_error {
	return C.lh_slot_holding_on_lost(s.h, callback, user)
}

func (s slotHold) end(done C.lh_done_fn, user C.uint64_t, now *C.lh_outcome) C.bool {
	return C.lh_slot_holding_end_async(s.h, done, user, now)
}

// ended: after the end, the slot is as it was then: no time left, and lost if it was lost while held.
func (slotHold) ended(last *C.lh_held_slot_info, lost bool, reason C.lh_loss_reason) {
	last.remaining_ns = 0
	if lost {
		last.lost, last.reason = true, reason
	}
}

// newHeldSlot keeps the C holding h of a slot of namespace for owner.
func newHeldSlot(h C.lh_slot_holding, namespace string, owner Owner) *HeldSlot {
	s := &HeldSlot{h: h, namespace: namespace, owner: owner}
	s.kept.c = slotHold{h}
	// The lease as it was at the end stays for Lease.
	s.kept.final = func() { s.renewedLease(&s.kept.last) }
	return s
}

// current is the held slot's state now (after the end: at the end).
func (s *HeldSlot) current() C.lh_held_slot_info { return s.kept.current() }

// renewedLease makes a new *SlotLease when the store's lease changed since
// the last one handed out; kept.mu is held and last fresh.
func (s *HeldSlot) renewedLease(last *C.lh_held_slot_info) {
	if s.kept.done || (s.lease != nil && s.lease.info == last.lease) {
		return
	}
	var h C.lh_slot_lease
	if takeError(C.lh_slot_holding_lease(s.h, &h)) == nil {
		s.lease = newSlotLease(h, s.namespace, s.owner)
	}
}

// Lease is the slot's lease as last renewed (its Renew and Release work as
// for a lease from Acquire; Hold releases it at the end).
func (s *HeldSlot) Lease() *SlotLease {
	var lease *SlotLease
	s.kept.locked(func(last *C.lh_held_slot_info) {
		s.renewedLease(last)
		lease = s.lease
	})
	return lease
}

// Namespace is the slot namespace's name.
func (s *HeldSlot) Namespace() string { return s.namespace }

// Owner is the owner the slot is held for.
func (s *HeldSlot) Owner() Owner { return s.owner }

// Slot is the slot, in [0, limit).
func (s *HeldSlot) Slot() uint32 { return uint32(s.current().lease.slot) }

// Node is the node number for IDs: the slot plus the namespace's Offset.
func (s *HeldSlot) Node() uint32 { return uint32(s.current().lease.node) }

// Fence is larger than every fence the store gave before (SLOT-08); renewals keep it.
func (s *HeldSlot) Fence() uint64 { return uint64(s.current().lease.fence) }

// Floor: issue only timestamps above it (SLOT-05, SLOT-06).
func (s *HeldSlot) Floor() uint64 { return uint64(s.current().lease.floor) }

// Ceiling: issue no timestamp past it; every renewal moves it on.
func (s *HeldSlot) Ceiling() uint64 { return uint64(s.current().lease.ceiling) }

// Issued records that a timestamp up to ms was issued: the end of the hold
// hands the largest one recorded to the slot's next holder as its floor
// (SLOT-05). After Hold returned it records nothing (the slot was released).
func (s *HeldSlot) Issued(ms uint64) {
	s.kept.mu.Lock()
	defer s.kept.mu.Unlock()
	if !s.kept.done {
		C.lh_error_free(C.lh_slot_holding_issued(s.h, C.uint64_t(ms)))
	}
}

// LastIssued is the largest timestamp recorded by Issued (0: none).
func (s *HeldSlot) LastIssued() uint64 { return uint64(s.current().last_issued) }

// Lost says whether the slot was lost; once true it stays true.
func (s *HeldSlot) Lost() bool { return bool(s.current().lost) }

// LossReason says why the slot was lost (NotLost while it is not): Unknown
// when a renewal or the release found it another's, Expired when no
// renewal was confirmed by the holder's deadline.
func (s *HeldSlot) LossReason() LossReason { return reasonOf(s.current().reason) }

// Remaining is the time left before the holder's deadline (the send time
// of the last confirmed call + TTL − Margin); zero once lost or once Hold returned.
func (s *HeldSlot) Remaining() time.Duration { return time.Duration(s.current().remaining_ns) }
