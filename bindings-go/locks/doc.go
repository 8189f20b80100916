// Package locks is the Go binding of Leasehold: leases and fenced locks,
// over the Rust core through its C ABI (cgo).
//
//	store := locks.Memory() // or locks.Connect(ctx, "leasehold://127.0.0.1:7450", locks.Token(t))
//	defer store.Close()
//	summaries, err := locks.OpenLock(store, "summaries", locks.TTL(30*time.Second))
//	err = summaries.Hold(ctx, chatID, func(ctx context.Context, lease *locks.Lease) error {
//		return saveSummary(ctx, chatID, lease.Fence) // ctx ends with cause ErrLost if the lease is lost
//	})
//
// Slot leases (Store.Slots, NewOwner, Slots.Acquire/Renew/Release) give a
// process a node number for an ID generator; IsTimeout tells a store
// timeout from an outcome.
//
// Every error errors.Is the sentinel of its ERR-01 code (ErrLost,
// ErrWaitTimeout, …). The static library this package links is built from
// the repository's ffi/ crate; docs/go.md says how to get it.
package locks
