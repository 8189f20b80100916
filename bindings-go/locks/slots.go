package locks

// #include "leasehold.h"
import "C"

import (
	"context"
	"runtime"
	"unsafe"
)

// Owner leases slots: a stable key (a service, a deployment) and the
// instance id of one process of it. An owner holds at most one slot of a
// namespace; a new process of the same key (a new instance) prefers the
// slot its key held last (SLOT-01). Owners are values: compare them with ==.
type Owner struct {
	key, instance string
}

// NewOwner is the owner key with a fresh random instance id, made by the core.
// An empty key fails ErrEmptyName; invalid UTF-8 or more than 1024 bytes,
// ErrInvalidArgument.
func NewOwner(key string) (Owner, error) {
	var buf [C.LH_NAME_MAX]byte
	var n C.size_t
	k, kn := cstr(key)
	err := takeError(C.lh_owner_new(k, kn, (*C.uint8_t)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &n))
	runtime.KeepAlive(key)
	if err != nil {
		return Owner{}, err
	}
	return Owner{key: key, instance: string(buf[:n])}, nil
}

// NewOwnerWithInstance is the owner key with the instance id instance, as
// a process that keeps its own id names itself. Each must be non-empty
// (ErrEmptyName), UTF-8 and at most 1024 bytes (ErrInvalidArgument).
func NewOwnerWithInstance(key, instance string) (Owner, error) {
	k, kn := cstr(key)
	i, in := cstr(instance)
	err := takeError(C.lh_owner_check(k, kn, i, in))
	runtime.KeepAlive(key)
	runtime.KeepAlive(instance)
	if err != nil {
		return Owner{}, err
	}
	return Owner{key: key, instance: instance}, nil
}

// Key is the owner's stable key.
func (o Owner) Key() string { return o.key }

// Instance is the owner's instance id.
func (o Owner) Instance() string { return o.instance }

// Slots is a slot namespace opened on a store: the slots [0,
// limit), each leased to one owner at a time, for a machine or node number
// of an ID generator. Safe for concurrent use.
type Slots struct {
	h     C.lh_slots
	store *Store // keeps the store (and its finalizer) away while the namespace is in use
	name  string
}

// Slots opens the slot namespace name with the options Limit, TTL,
// Tolerance, Offset, Timeout and Margin (for Slots.Hold). Nothing is sent
// to the store; bad options fail at once (ErrEmptyName, ErrInvalidArgument
// for a limit outside 1 to 65536 or an offset that overflows,
// ErrInvalidTTL for a duration out of range, or a margin not below half
// the TTL). A namespace first used with another limit, tolerance or offset
// fails ErrNamespaceMismatch at the first Acquire (SLOT-02).
func (s *Store) Slots(name string, opts ...Option) (*Slots, error) {
	o, err := collect("Store.Slots", opts, "Limit", "TTL", "Tolerance", "Offset", "Timeout", "Margin")
	if err != nil {
		return nil, err
	}
	var co C.lh_slots_options
	if o.limit != nil {
		co.has_limit, co.limit = true, C.uint32_t(*o.limit)
	}
	if o.ttl != nil {
		co.has_ttl, co.ttl_ns = true, nanos(*o.ttl)
	}
	if o.tolerance != nil {
		co.has_tolerance, co.tolerance_ns = true, nanos(*o.tolerance)
	}
	if o.offset != nil {
		co.has_offset, co.offset = true, C.uint32_t(*o.offset)
	}
	if o.timeout != nil {
		co.has_timeout, co.timeout_ns = true, nanos(*o.timeout)
	}
	if o.margin != nil {
		co.has_margin, co.margin_ns = true, nanos(*o.margin)
	}
	var h C.lh_slots
	n, nn := cstr(name)
	err = takeError(C.lh_slots_open(s.h, n, nn, &co, &h))
	runtime.KeepAlive(s)
	runtime.KeepAlive(name)
	if err != nil {
		return nil, err
	}
	slots := &Slots{h: h, store: s, name: name}
	runtime.SetFinalizer(slots, func(s *Slots) { C.lh_error_free(C.lh_slots_free(s.h)) })
	return slots, nil
}

// Name is the namespace's name.
func (s *Slots) Name() string { return s.name }

// Close frees the namespace handle (its leases stay usable with another
// handle of the namespace). A second Close fails ErrClosed.
func (s *Slots) Close() error {
	runtime.SetFinalizer(s, nil)
	err := takeError(C.lh_slots_free(s.h))
	runtime.KeepAlive(s)
	return err
}

// Acquire leases a slot to owner (SLOT-01): the slot it holds already
// (same slot, same fence), else the slot of the option Preferred if free,
// else the slot its key held last if free, else the lowest free slot. An
// expired slot is free. When every slot is held it answers (nil, false,
// nil): exhausted is an outcome, not an error.
//
// The call fails ErrTimeout (IsTimeout) past the namespace's Timeout, its
// outcome unknown (an Acquire repeated by the same owner returns the lease
// it got); ErrCancelled when ctx ends first.
func (s *Slots) Acquire(ctx context.Context, owner Owner, opts ...Option) (*SlotLease, bool, error) {
	hasPreferred, preferred, err := preferredSlot("Slots.Acquire", opts)
	if err != nil {
		return nil, false, err
	}
	p := startCall(ctx)
	k, kn := cstr(owner.key)
	i, in := cstr(owner.instance)
	o, err := p.wait(p.ready() && bool(C.lh_slots_acquire_async(s.h, k, kn, i, in, hasPreferred, preferred, p.token, doneFn, p.user(), p.now())))
	runtime.KeepAlive(s)
	runtime.KeepAlive(owner)
	if err != nil || !bool(o.held) {
		return nil, false, err
	}
	return newSlotLease(C.lh_slot_lease{id: C.uint64_t(o.handle)}, s.name, owner), true, nil
}

// preferredSlot reads the options of call (Slots.Acquire, Slots.Hold): the
// slot of the option Preferred, as the C calls take it.
func preferredSlot(call string, opts []Option) (has C.bool, slot C.uint32_t, err error) {
	o, err := collect(call, opts, "Preferred")
	if err != nil || o.preferred == nil {
		return false, 0, err
	}
	return true, C.uint32_t(*o.preferred), nil
}

// Renew renews lease for the namespace's TTL from the store's now (SLOT-04):
// the fence stays, the expiry and the ceiling never move back. It answers
// the renewed lease, or (nil, false, nil) when the slot's owner or fence no
// longer match (taken by another after it expired, or released). The old
// *SlotLease stays usable. ErrTimeout and ErrCancelled as for Acquire.
func (s *Slots) Renew(ctx context.Context, lease *SlotLease) (*SlotLease, bool, error) {
	if lease == nil {
		return nil, false, newError(CodeInvalidArgument, "Slots.Renew: a nil *SlotLease")
	}
	var h C.lh_slot_lease
	var renewed C.bool
	err := withCancel(ctx, func(c C.lh_cancel) *C.lh_error {
		return C.lh_slots_renew(s.h, lease.h, c, &h, &renewed)
	})
	runtime.KeepAlive(s)
	runtime.KeepAlive(lease)
	if err != nil || !bool(renewed) {
		return nil, false, err
	}
	return newSlotLease(h, lease.namespace, lease.owner), true, nil
}

// Release releases lease, whose holder issued timestamps up to lastIssued
// (milliseconds since the Unix epoch): the slot's next holder gets the
// floor max(floor, min(lastIssued, ceiling)) (SLOT-05). It answers false
// when the slot's owner or fence no longer match; a release repeated by the
// same holder answers true again and changes nothing. The *SlotLease stays
// usable until Close. ErrTimeout and ErrCancelled as for Acquire.
func (s *Slots) Release(ctx context.Context, lease *SlotLease, lastIssued uint64) (bool, error) {
	if lease == nil {
		return false, newError(CodeInvalidArgument, "Slots.Release: a nil *SlotLease")
	}
	var released C.bool
	err := withCancel(ctx, func(c C.lh_cancel) *C.lh_error {
		return C.lh_slots_release(s.h, lease.h, C.uint64_t(lastIssued), c, &released)
	})
	runtime.KeepAlive(s)
	runtime.KeepAlive(lease)
	return bool(released), err
}

// SlotLease is a lease on one slot, as the store last returned it. Times
// are milliseconds since the Unix epoch on the store's clock. Only Acquire
// and Renew make one, so its fence cannot be forged. Safe for concurrent use.
type SlotLease struct {
	h         C.lh_slot_lease
	info      C.lh_slot_info
	namespace string
	owner     Owner
}

func newSlotLease(h C.lh_slot_lease, namespace string, owner Owner) *SlotLease {
	l := &SlotLease{h: h, namespace: namespace, owner: owner}
	C.lh_error_free(C.lh_slot_lease_info(h, &l.info))
	runtime.SetFinalizer(l, func(l *SlotLease) { C.lh_error_free(C.lh_slot_lease_free(l.h)) })
	return l
}

// Namespace is the slot namespace's name.
func (l *SlotLease) Namespace() string { return l.namespace }

// Owner is the owner the slot is leased to.
func (l *SlotLease) Owner() Owner { return l.owner }

// Slot is the slot, in [0, limit).
func (l *SlotLease) Slot() uint32 { return uint32(l.info.slot) }

// Node is the node number for IDs: the slot plus the namespace's Offset.
func (l *SlotLease) Node() uint32 { return uint32(l.info.node) }

// Fence is larger than every fence the store gave before (SLOT-08).
func (l *SlotLease) Fence() uint64 { return uint64(l.info.fence) }

// Floor: issue only timestamps above it; the slot's previous holder may
// have issued up to it (SLOT-05, SLOT-06).
func (l *SlotLease) Floor() uint64 { return uint64(l.info.floor) }

// ExpiresAt is when the lease expires unless renewed.
func (l *SlotLease) ExpiresAt() uint64 { return uint64(l.info.expires_at) }

// Ceiling: issue no timestamp past it; the slot's next holder's floor may be it.
func (l *SlotLease) Ceiling() uint64 { return uint64(l.info.ceiling) }

// Close frees the lease's handle without releasing the slot (it expires at
// its TTL); a finalizer does the same for a lease dropped unclosed. Later
// Renew and Release of it fail ErrClosed, as does a second Close.
func (l *SlotLease) Close() error {
	runtime.SetFinalizer(l, nil)
	err := takeError(C.lh_slot_lease_free(l.h))
	runtime.KeepAlive(l)
	return err
}
