package locks

// #include <stdlib.h>
// #include "leasehold.h"
import "C"

import (
	"context"
	"runtime"
	"time"
	"unsafe"
)

// Store grants leases: the embedded store (Memory), the server store or
// etcd (Connect). Safe for concurrent use. Close it when done; a store
// dropped unclosed is freed by a finalizer, which never blocks: the store
// ends once its locks and leases are gone too.
type Store struct {
	h C.lh_store
}

func newStore(h C.lh_store) *Store {
	s := &Store{h: h}
	runtime.SetFinalizer(s, func(s *Store) { C.lh_error_free(C.lh_store_free(s.h)) })
	return s
}

// Memory opens an embedded store in this process: its holders need no
// renewal, and its keys are let go when the function returns or the
// process ends (LOCK-19).
func Memory() *Store {
	var h C.lh_store
	if err := takeError(C.lh_store_memory(&h)); err != nil {
		panic("locks: the embedded store does not open: " + err.Error())
	}
	return newStore(h)
}

// Connect connects to the store at url, blocking until connected or until
// ctx ends (ErrCancelled): the server store ("leasehold://host:port", or
// "leaseholds://" for TLS) with the options Token and CA, etcd
// ("etcd://h1:2379,h2:2379/PREFIX", or "etcds://" for TLS; DIST-01) with
// the options User, CA, ClientCert and AcceptOldEtcd (docs/etcd.md), or
// PostgreSQL ("postgres://user@h1,h2/db"; PG-01) with the option User
// (docs/postgres.md). Identity says who this client is wherever the
// store shows its holders (WHO-01).
func Connect(ctx context.Context, url string, opts ...Option) (*Store, error) {
	s, err := collect("Connect", opts, "Token", "CA", "User", "ClientCert", "AcceptOldEtcd", "Identity")
	if err != nil {
		return nil, err
	}
	o, free := s.connectOptions()
	defer free()
	p := startCall(ctx)
	u, un := cstr(url)
	out, err := p.wait(p.ready() && bool(C.lh_store_connect_async(u, un, o, p.token, doneFn, p.user(), p.now())))
	runtime.KeepAlive(url)
	if err != nil {
		return nil, err
	}
	return newStore(C.lh_store{id: C.uint64_t(out.handle)}), nil
}

// connectOptions copies the options of Connect into C memory (no Go
// pointer inside a struct passed to C), freed by free after the call.
func (s settings) connectOptions() (o *C.lh_connect_options, free func()) {
	var owned []unsafe.Pointer
	put := func(b []byte) (*C.uint8_t, C.size_t) {
		if len(b) == 0 {
			return nil, 0
		}
		p := C.CBytes(b)
		owned = append(owned, p)
		return (*C.uint8_t)(p), C.size_t(len(b))
	}
	text := func(t *string) []byte {
		if t == nil {
			return nil
		}
		return []byte(*t)
	}
	o = (*C.lh_connect_options)(C.calloc(1, C.size_t(unsafe.Sizeof(C.lh_connect_options{}))))
	owned = append(owned, unsafe.Pointer(o))
	o.token, o.token_len = put(text(s.token))
	o.ca_pem, o.ca_pem_len = put(s.caPEM)
	o.user, o.user_len = put(text(s.user))
	o.password, o.password_len = put(text(s.password))
	o.client_cert_pem, o.client_cert_pem_len = put(s.clientCert)
	o.client_key_pem, o.client_key_pem_len = put(s.clientKey)
	o.accept_old_etcd = C.bool(s.acceptOldEtcd)
	o.identity, o.identity_len = put(text(s.identity))
	return o, func() {
		for _, p := range owned {
			C.free(p)
		}
	}
}

// Close closes the store: every lease it gave ends, every waiting call fails
// ErrClosed, and later calls on it, its locks and its leases fail ErrClosed.
// A second Close fails ErrClosed.
func (s *Store) Close() error {
	runtime.SetFinalizer(s, nil)
	err := takeError(C.lh_store_close(s.h))
	runtime.KeepAlive(s)
	return err
}

// TryLock takes the manual lease name for ttl if nobody holds it, at once
// (MANUAL-01): (lease, true, nil), or (nil, false, nil) when another holder
// has it. The lease is renewed only by Extend; Unlock it when done.
func (s *Store) TryLock(ctx context.Context, name string, ttl time.Duration) (*Lease, bool, error) {
	p := startCall(ctx)
	n, nn := cstr(name)
	o, err := p.wait(p.ready() && bool(C.lh_store_try_acquire_async(s.h, n, nn, nanos(ttl), p.token, doneFn, p.user(), p.now())))
	runtime.KeepAlive(s)
	runtime.KeepAlive(name)
	if err != nil || !bool(o.held) {
		return nil, false, err
	}
	return newManualLease(s, name, C.lh_manual{id: C.uint64_t(o.handle)}), true, nil
}

// Lock waits for the manual lease name (MANUAL-02), woken by the store's
// push where it pushes. ctx bounds the wait (ErrCancelled, which also
// errors.Is the ctx's cause), and so does the option Wait (ErrWaitTimeout);
// the ttl starts at the grant.
func (s *Store) Lock(ctx context.Context, name string, ttl time.Duration, opts ...Option) (*Lease, error) {
	o, err := collect("Store.Lock", opts, "Wait")
	if err != nil {
		return nil, err
	}
	hasWait, wait := C.bool(o.wait != nil), C.int64_t(0)
	if o.wait != nil {
		wait = nanos(*o.wait)
	}
	p := startCall(ctx)
	n, nn := cstr(name)
	out, err := p.wait(p.ready() && bool(C.lh_store_acquire_async(s.h, n, nn, nanos(ttl), hasWait, wait, p.token, doneFn, p.user(), p.now())))
	runtime.KeepAlive(s)
	runtime.KeepAlive(name)
	if err != nil {
		return nil, err
	}
	return newManualLease(s, name, C.lh_manual{id: C.uint64_t(out.handle)}), nil
}
