package locks

import (
	"context"
	"sync"
	"time"
)

// heldCtx is the ctx of a held function: a child of the ctx given to the
// hold that also ends, with cause ErrLost, when the hold is lost (LOCK-09),
// and ends when the hold ends. It is its parent until something needs it
// to differ: a loss, the end, or a caller of Done (context.WithCancel,
// context.AfterFunc, a select); only then is a context.WithCancelCause of
// the parent made, so that a hold nobody waits on costs no cancelCtx.
// Until then Err, Value (and so context.Cause) and Deadline are the
// parent's, which is what the child would answer.
type heldCtx struct {
	parent context.Context
	what   string // "lease" or "slot", for the message of a loss

	mu     sync.Mutex
	inner  context.Context // made on demand; nil until then
	cancel context.CancelCauseFunc
	lost   error // the loss, once it came
	ended  bool  // the hold ended
}

// newHeldCtx is the ctx of a hold of what ("lease" or "slot") under parent.
func newHeldCtx(parent context.Context, what string) *heldCtx {
	return &heldCtx{parent: parent, what: what}
}

// made is the child, made now if it was not; c.mu is held. A loss or an
// end that came before it was made cancels it at once.
func (c *heldCtx) made() context.Context {
	if c.inner == nil {
		c.inner, c.cancel = context.WithCancelCause(c.parent)
		if c.lost != nil {
			c.cancel(c.lost)
		} else if c.ended {
			c.cancel(nil)
		}
	}
	return c.inner
}

// differs is the child if the ctx may differ from its parent now (it was
// made, or the hold was lost or ended), else nil.
func (c *heldCtx) differs() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inner == nil && c.lost == nil && !c.ended {
		return nil
	}
	return c.made()
}

// lose cancels the ctx with cause err (an *Error of code Lost); the first loss counts.
func (c *heldCtx) lose(err error) {
	c.mu.Lock()
	if c.lost == nil {
		c.lost = err
	}
	c.made()
	cancel := c.cancel
	c.mu.Unlock()
	cancel(err)
}

// end cancels the ctx (without a cause of its own): the hold ended.
func (c *heldCtx) end() {
	c.mu.Lock()
	c.ended = true
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel(nil)
	}
}

// Deadline is the parent's.
func (c *heldCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }

// Done is the child's channel (making it).
func (c *heldCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.made().Done()
}

// Err is the child's error, or the parent's while they cannot differ.
func (c *heldCtx) Err() error {
	if in := c.differs(); in != nil {
		return in.Err()
	}
	return c.parent.Err()
}

// Value is the child's value, or the parent's while they cannot differ
// (context.Cause finds the child's cause through it).
func (c *heldCtx) Value(key any) any {
	if in := c.differs(); in != nil {
		return in.Value(key)
	}
	return c.parent.Value(key)
}

// String names the ctx as context's own types do.
func (c *heldCtx) String() string {
	return contextName(c.parent) + ".WithCancelCause"
}

// contextName is what a ctx says it is (its String), or its type.
func contextName(ctx context.Context) string {
	if s, ok := ctx.(interface{ String() string }); ok {
		return s.String()
	}
	return "context"
}
