package locks

/*
#cgo noescape lh_ids_next
#cgo nocallback lh_ids_next
#cgo noescape lh_ids_next_into
#cgo nocallback lh_ids_next_into
#cgo noescape lh_ids_info
#cgo nocallback lh_ids_info
#include <stdlib.h>
#include "leasehold.h"
*/
import "C"

import (
	"context"
	"errors"
	"runtime"
	"unsafe"
)

// IDLayout is how an ID's 64 bits are split, high bits to low: TimeBits of
// ticks since EpochMs, NodeBits of node number, SequenceBits of sequence
// within a tick. At least one bit each and at most 63 in all; a tick of 1
// ms to 1 h. A namespace's layout is fixed by its first use.
type IDLayout struct {
	// TimeBits: bits of timestamp (ticks since the epoch).
	TimeBits uint8
	// NodeBits: bits of node number; the namespace's Offset + Limit must fit.
	NodeBits uint8
	// SequenceBits: bits of sequence within one tick.
	SequenceBits uint8
	// TickMs is the length of one tick in milliseconds.
	TickMs uint32
	// EpochMs is the time of tick 0, in milliseconds since the Unix epoch.
	EpochMs uint64
}

// The core's layouts.
var (
	// DefaultLayout: 41 bits of milliseconds from 2026-01-01, 10 of node
	// (1024 nodes), 12 of sequence (4,096 IDs per millisecond per node).
	DefaultLayout = layoutOf(C.lh_id_layout_default())
	// JSSafeLayout: IDs below 2^53, exact as JavaScript numbers: 41 bits of
	// milliseconds, 6 of node, 6 of sequence.
	JSSafeLayout = layoutOf(C.lh_id_layout_js_safe())
	// SecondsLayout: 31 bits of seconds, 10 of node, 22 of sequence.
	SecondsLayout = layoutOf(C.lh_id_layout_seconds())
)

// CustomLayout is a layout of milliseconds from DefaultLayout's epoch with
// these splits (set TickMs and EpochMs on the result for others).
func CustomLayout(timeBits, nodeBits, sequenceBits uint8) IDLayout {
	l := DefaultLayout
	l.TimeBits, l.NodeBits, l.SequenceBits = timeBits, nodeBits, sequenceBits
	return l
}

func layoutOf(l C.lh_id_layout) IDLayout {
	return IDLayout{
		TimeBits:     uint8(l.time_bits),
		NodeBits:     uint8(l.node_bits),
		SequenceBits: uint8(l.sequence_bits),
		TickMs:       uint32(l.tick_ms),
		EpochMs:      uint64(l.epoch_ms),
	}
}

func (l IDLayout) c() C.lh_id_layout {
	return C.lh_id_layout{
		time_bits:     C.uint8_t(l.TimeBits),
		node_bits:     C.uint8_t(l.NodeBits),
		sequence_bits: C.uint8_t(l.SequenceBits),
		tick_ms:       C.uint32_t(l.TickMs),
		epoch_ms:      C.uint64_t(l.EpochMs),
	}
}

// IDParts is an ID taken apart by IDLayout.Parts.
type IDParts struct {
	// Tick: ticks since the layout's epoch.
	Tick uint64
	// TimestampMs is the tick's start in milliseconds since the Unix epoch.
	TimestampMs uint64
	// Node is the node number.
	Node uint32
	// Sequence is the sequence within the tick.
	Sequence uint64
}

// Parts takes id apart; a layout out of range fails ErrInvalidArgument.
func (l IDLayout) Parts(id uint64) (IDParts, error) {
	var p C.lh_id_parts
	if err := takeError(C.lh_id_layout_parts(l.c(), C.uint64_t(id), &p)); err != nil {
		return IDParts{}, err
	}
	return IDParts{
		Tick:        uint64(p.tick),
		TimestampMs: uint64(p.timestamp_ms),
		Node:        uint32(p.node),
		Sequence:    uint64(p.sequence),
	}, nil
}

// IDGenerator issues unique 64-bit IDs (IDGEN) on one slot lease of a
// namespace: timestamp | node | sequence in the namespace's layout, only
// timestamps in (floor, ceiling] of the lease and before its holder
// deadline, so that every generator of the namespace issues IDs no other
// issues (IDGEN-01), and one generator's IDs strictly increase (IDGEN-03).
// The core renews the slot in the background. Safe for concurrent use.
//
// Close it when done: it seals (nothing is issued after) and releases the
// slot, passing the largest tick issued to the slot's next holder. A
// generator dropped unclosed is freed by a finalizer, which never blocks:
// the core seals it and releases its slot in the background.
type IDGenerator struct {
	h      C.lh_ids
	store  *Store // keeps the store (and its finalizer) away while the generator is in use
	name   string
	owner  Owner
	node   uint32
	layout IDLayout
}

// IDs opens an ID generator on the namespace name, blocking until it
// leased a slot or until ctx ends (ErrCancelled), with the options Layout,
// Limit, Offset, TTL, Tolerance, Timeout, MaxLead, OwnerKey and Preferred.
// It fails ErrNotReady (retryable) when every slot is held,
// ErrNamespaceMismatch when the namespace was first used with another
// layout, limit, tolerance or offset, ErrInvalidArgument for a layout out
// of range or node numbers that do not fit it, ErrInvalidTTL for a
// duration out of range, ErrTimeout past the Timeout.
func (s *Store) IDs(ctx context.Context, name string, opts ...Option) (*IDGenerator, error) {
	if s == nil {
		return nil, newError(CodeInvalidArgument, "Store.IDs: a nil *Store")
	}
	o, err := collect("Store.IDs", opts, "Layout", "Limit", "Offset", "TTL", "Tolerance", "Timeout", "MaxLead", "OwnerKey", "Preferred")
	if err != nil {
		return nil, err
	}
	var co C.lh_ids_options
	if o.layout != nil {
		co.has_layout, co.layout = true, o.layout.c()
	}
	if o.limit != nil {
		co.has_limit, co.limit = true, C.uint32_t(*o.limit)
	}
	if o.offset != nil {
		co.has_offset, co.offset = true, C.uint32_t(*o.offset)
	}
	if o.ttl != nil {
		co.has_ttl, co.ttl_ns = true, nanos(*o.ttl)
	}
	if o.tolerance != nil {
		co.has_tolerance, co.tolerance_ns = true, nanos(*o.tolerance)
	}
	if o.timeout != nil {
		co.has_timeout, co.timeout_ns = true, nanos(*o.timeout)
	}
	if o.maxLead != nil {
		co.has_max_lead, co.max_lead_ns = true, nanos(*o.maxLead)
	}
	if o.preferred != nil {
		co.has_preferred, co.preferred = true, C.uint32_t(*o.preferred)
	}
	if o.ownerKey != nil {
		// C memory (no Go pointer inside a struct passed to C), one byte
		// more so that an empty key is given (and refused), not the default.
		key := C.malloc(C.size_t(len(*o.ownerKey) + 1))
		defer C.free(key)
		copy(unsafe.Slice((*byte)(key), len(*o.ownerKey)), *o.ownerKey)
		co.owner_key, co.owner_key_len = (*C.uint8_t)(key), C.size_t(len(*o.ownerKey))
	}
	p := startCall(ctx)
	n, nn := cstr(name)
	out, err := p.wait(p.ready() && bool(C.lh_ids_open_async(s.h, n, nn, &co, p.token, doneFn, p.user(), p.now())))
	runtime.KeepAlive(s)
	runtime.KeepAlive(name)
	if err != nil {
		return nil, err
	}
	g := &IDGenerator{h: C.lh_ids{id: C.uint64_t(out.handle)}, store: s, name: name}
	runtime.SetFinalizer(g, func(g *IDGenerator) { C.lh_error_free(C.lh_ids_free(g.h)) })
	info := g.info()
	g.node, g.layout = uint32(info.node), layoutOf(info.layout)
	var key, instance [C.LH_NAME_MAX]byte
	var kn, in C.size_t
	err = takeError(C.lh_ids_owner(g.h, (*C.uint8_t)(unsafe.Pointer(&key[0])), C.size_t(len(key)), &kn,
		(*C.uint8_t)(unsafe.Pointer(&instance[0])), C.size_t(len(instance)), &in))
	if err != nil {
		return nil, errors.Join(err, g.Close())
	}
	g.owner = Owner{key: string(key[:kn]), instance: string(instance[:in])}
	return g, nil
}

// nilGenerator is the error of a call on a nil *IDGenerator.
func nilGenerator(call string) error {
	return newError(CodeInvalidArgument, call+": a nil *IDGenerator")
}

// Next is the next ID, without waiting: ErrNotReady when none can be
// issued yet (retryable: NextWait waits), ErrOverflow when the layout's
// time range is used up, ErrLost once the slot was lost or the generator
// closed (IDGEN-04). One cgo call, no allocation unless it fails.
func (g *IDGenerator) Next() (uint64, error) {
	if g == nil {
		return 0, nilGenerator("IDGenerator.Next")
	}
	var id C.uint64_t
	e := C.lh_ids_next(g.h, &id)
	runtime.KeepAlive(g)
	if e != nil {
		return 0, takeError(e)
	}
	return uint64(id), nil
}

// NextWait is the next ID, waiting while none can be issued yet, until ctx
// ends (ErrCancelled, issuing nothing); it fails as Next does but for
// ErrNotReady. It tries Next first, and waits without holding an OS thread.
func (g *IDGenerator) NextWait(ctx context.Context) (uint64, error) {
	if g == nil {
		return 0, nilGenerator("IDGenerator.NextWait")
	}
	if ctx == nil {
		return 0, newError(CodeInvalidArgument, "IDGenerator.NextWait: a nil context.Context")
	}
	if id, err := g.Next(); !errors.Is(err, ErrNotReady) {
		return id, err
	}
	p := startCall(ctx)
	o, err := p.wait(p.ready() && bool(C.lh_ids_next_async(g.h, p.token, doneFn, p.user(), p.now())))
	runtime.KeepAlive(g)
	if err != nil {
		return 0, err
	}
	return uint64(o.fence), nil
}

// NextInto fills buf with as many IDs as can be issued now, in one cgo
// call, and says how many (at least 1; 0 only for an empty buf); it fails
// as Next does when none can, and then fills nothing.
func (g *IDGenerator) NextInto(buf []uint64) (int, error) {
	if g == nil {
		return 0, nilGenerator("IDGenerator.NextInto")
	}
	var n C.size_t
	e := C.lh_ids_next_into(g.h, (*C.uint64_t)(unsafe.Pointer(unsafe.SliceData(buf))), C.size_t(len(buf)), &n)
	runtime.KeepAlive(g)
	runtime.KeepAlive(buf)
	if e != nil {
		return 0, takeError(e)
	}
	return int(n), nil
}

// Close seals the generator (nothing is issued after this, Next fails
// ErrLost) and releases its slot, passing the start of the largest tick
// issued as the next holder's floor (IDGEN-02); it waits for the release
// without holding an OS thread. It fails ErrLost if the slot was lost
// meanwhile; a second Close does nothing.
func (g *IDGenerator) Close() error {
	if g == nil {
		return nilGenerator("IDGenerator.Close")
	}
	p := startCall(context.Background())
	_, err := p.wait(p.ready() && bool(C.lh_ids_close_async(g.h, doneFn, p.user(), p.now())))
	runtime.KeepAlive(g)
	return err
}

// info is what the generator is like now (zero if its handle is gone).
func (g *IDGenerator) info() C.lh_id_generator_info {
	var info C.lh_id_generator_info
	C.lh_error_free(C.lh_ids_info(g.h, &info))
	runtime.KeepAlive(g)
	return info
}

// Namespace is the ID namespace's name.
func (g *IDGenerator) Namespace() string { return g.name }

// Owner is the owner the slot is leased under: the OwnerKey and a fresh instance id.
func (g *IDGenerator) Owner() Owner { return g.owner }

// Node is the node number every ID carries: the slot plus the namespace's Offset.
func (g *IDGenerator) Node() uint32 { return g.node }

// Layout is the layout of the IDs.
func (g *IDGenerator) Layout() IDLayout { return g.layout }

// Lease is the generator's slot lease as last renewed, or nil if the
// handle is gone.
func (g *IDGenerator) Lease() *SlotLease {
	var h C.lh_slot_lease
	err := takeError(C.lh_ids_lease(g.h, &h))
	runtime.KeepAlive(g)
	if err != nil {
		return nil
	}
	return newSlotLease(h, g.name, g.owner)
}

// LastIssued is the start of the largest tick issued so far, in
// milliseconds since the Unix epoch (0: none).
func (g *IDGenerator) LastIssued() uint64 { return uint64(g.info().last_issued) }

// Lost says whether the slot was lost; once true, nothing more is issued.
func (g *IDGenerator) Lost() bool { return bool(g.info().lost) }

// LossReason says why the slot was lost (NotLost while it is not).
func (g *IDGenerator) LossReason() LossReason { return reasonOf(g.info().reason) }
