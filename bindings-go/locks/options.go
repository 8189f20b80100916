package locks

import (
	"fmt"
	"time"
)

// Option sets an option of OpenLock (TTL, MaxHold, Wait, Margin), of a
// call that waits (Wait), of Connect (Token, CA, User, ClientCert,
// AcceptOldEtcd), of Store.Slots (Limit,
// TTL, Tolerance, Offset, Timeout, Margin), of Slots.Acquire and
// Slots.Hold (Preferred) or of Store.IDs (Layout, Limit, Offset, TTL,
// Tolerance, Timeout, MaxLead, OwnerKey, Preferred). A call given an option it does not take fails
// ErrInvalidArgument.
type Option struct {
	name  string
	apply func(*settings)
}

type settings struct {
	ttl, maxHold, wait, margin *time.Duration
	token                      *string
	caPEM                      []byte
	user, password             *string
	clientCert, clientKey      []byte
	acceptOldEtcd              bool
	tolerance, timeout         *time.Duration
	limit, offset, preferred   *uint32
	layout                     *IDLayout
	maxLead                    *time.Duration
	ownerKey                   *string
	identity                   *string
}

// TTL: how long a lease lasts without renewal, 1 s to 1 h, 10 s when not
// given (LOCK-13); for Store.Slots, how long a slot lease lasts after the
// store's now unless renewed, in the same range.
func TTL(d time.Duration) Option {
	return Option{"TTL", func(s *settings) { s.ttl = &d }}
}

// MaxHold: the store revokes a lease this long after its grant, whatever
// its renewals (LOCK-12); at least the TTL.
func MaxHold(d time.Duration) Option {
	return Option{"MaxHold", func(s *settings) { s.maxHold = &d }}
}

// Wait bounds the time a hold (on the lock, or on one call) or a Store.Lock
// spends in line: past it the call fails ErrWaitTimeout and leaves the line (LOCK-18).
func Wait(d time.Duration) Option {
	return Option{"Wait", func(s *settings) { s.wait = &d }}
}

// Margin: how long before the store's expiry the holder declares its lease
// lost (LOCK-04); for Store.Slots, how long before a held slot's expiry
// Slots.Hold declares it lost. A tenth of the TTL by default, below half the TTL.
func Margin(d time.Duration) Option {
	return Option{"Margin", func(s *settings) { s.margin = &d }}
}

// Token admits a connection to the server store, to read or to read and write (LOCK-14).
func Token(t string) Option {
	return Option{"Token", func(s *settings) { s.token = &t }}
}

// CA trusts these PEM certificates for a leaseholds:// (TLS) connection.
func CA(pem []byte) Option {
	return Option{"CA", func(s *settings) { s.caPEM = append([]byte(nil), pem...) }}
}

// User connects to etcd as this user, with this password (etcd's
// authentication; the server store ignores it).
func User(name, password string) Option {
	return Option{"User", func(s *settings) { s.user, s.password = &name, &password }}
}

// ClientCert presents this PEM client certificate and its PEM private key
// over TLS (etcds:// with etcd's --client-cert-auth).
func ClientCert(certPEM, keyPEM []byte) Option {
	return Option{"ClientCert", func(s *settings) {
		s.clientCert = append([]byte(nil), certPEM...)
		s.clientKey = append([]byte(nil), keyPEM...)
	}}
}

// AcceptOldEtcd opens an etcd older than the releases that fixed the lease
// and revision bugs the contracts depend on (3.4.32, 3.5.14), which Connect
// refuses otherwise (DIST-08; docs/etcd.md).
func AcceptOldEtcd() Option {
	return Option{"AcceptOldEtcd", func(s *settings) { s.acceptOldEtcd = true }}
}

// Identity is who this client is (WHO-01): every store records it with
// every lease the client takes and shows it wherever it shows a holder
// (Lock.Holder, leasehold ls, the live page). At most 256 bytes, no
// control characters; by default hostname:pid.
func Identity(name string) Option {
	return Option{"Identity", func(s *settings) { s.identity = &name }}
}

// collect applies opts for call, refusing an option not among allowed.
func collect(call string, opts []Option, allowed ...string) (settings, error) {
	if len(opts) == 0 {
		return settings{}, nil
	}
	// Declared here: the options write to it (so it escapes), and a call
	// without options should cost no allocation.
	var s settings
	for _, o := range opts {
		if o.apply == nil {
			return s, newError(CodeInvalidArgument, call+": a zero Option")
		}
		ok := false
		for _, a := range allowed {
			ok = ok || a == o.name
		}
		if !ok {
			return s, newError(CodeInvalidArgument, fmt.Sprintf("%s does not take the option %s", call, o.name))
		}
		o.apply(&s)
	}
	return s, nil
}

// Limit: a slot namespace has the slots [0, n), 1 to 65536; 1024 when not
// given (for Store.IDs: as many as the layout's node bits hold above the
// Offset, at most 65536).
func Limit(n uint32) Option {
	return Option{"Limit", func(s *settings) { s.limit = &n }}
}

// Tolerance: a slot lease's ceiling lies d beyond its expiry, at most 1 h;
// 1 s when not given.
func Tolerance(d time.Duration) Option {
	return Option{"Tolerance", func(s *settings) { s.tolerance = &d }}
}

// Offset: what a slot namespace's node numbers add to the slot (Node() is
// Slot() + n; n + the limit must fit a uint32); 0 when not given.
func Offset(n uint32) Option {
	return Option{"Offset", func(s *settings) { s.offset = &n }}
}

// Timeout bounds each Acquire, Renew and Release of a slot namespace: past
// it the call fails ErrTimeout (IsTimeout), its outcome unknown. More than
// zero; 5 s when not given.
func Timeout(d time.Duration) Option {
	return Option{"Timeout", func(s *settings) { s.timeout = &d }}
}

// Preferred: the slot Slots.Acquire (and Slots.Hold) tries after one the
// owner holds already, and Store.IDs tries first; it must lie in [0, limit).
func Preferred(slot uint32) Option {
	return Option{"Preferred", func(s *settings) { s.preferred = &slot }}
}

// Layout: the bit layout of Store.IDs' IDs (DefaultLayout when not given),
// fixed by the namespace's first use (ErrNamespaceMismatch otherwise).
func Layout(l IDLayout) Option {
	return Option{"Layout", func(s *settings) { s.layout = &l }}
}

// MaxLead: how far ahead of the store's clock Store.IDs' generator may
// issue (a tick's sequence used up borrows the next tick); 1 s when not
// given, zero: never ahead.
func MaxLead(d time.Duration) Option {
	return Option{"MaxLead", func(s *settings) { s.maxLead = &d }}
}

// OwnerKey: the owner key Store.IDs' generator leases its slot under
// ("leasehold-ids" when not given); every generator gets a fresh instance id.
func OwnerKey(key string) Option {
	return Option{"OwnerKey", func(s *settings) { s.ownerKey = &key }}
}
