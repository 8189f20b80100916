package locks

import (
	"context"
	"errors"
	"testing"
	"time"
)

type ctxKey struct{}

// The held function's ctx, made lazily, answers as the child
// context.WithCancelCause(parent) that it stands for: its parent's values,
// deadline and end until the hold is lost or ends; then its own end, with
// cause ErrLost for a loss, reaching the contexts made from it before.
func TestHeldCtxIsTheChildItStandsFor(t *testing.T) {
	lost := &Error{Code: CodeLost, Message: "the lease was lost (expired)", Reason: Expired}

	parent, stop := context.WithTimeout(context.WithValue(context.Background(), ctxKey{}, "v"), time.Hour)
	defer stop()
	c := newHeldCtx(parent, "lease")
	if c.Err() != nil || context.Cause(c) != nil || c.Value(ctxKey{}) != "v" {
		t.Fatalf("a fresh ctx: Err %v, Cause %v, Value %v", c.Err(), context.Cause(c), c.Value(ctxKey{}))
	}
	if d, ok := c.Deadline(); !ok || d.IsZero() {
		t.Fatal("the parent's deadline is the ctx's")
	}
	child, cancelChild := context.WithCancel(c) // made before the loss
	defer cancelChild()
	fired := make(chan struct{})
	context.AfterFunc(c, func() { close(fired) })
	c.lose(lost)
	c.lose(&Error{Code: CodeLost, Message: "a second loss does not count"})
	<-c.Done()
	<-child.Done()
	<-fired
	if !errors.Is(c.Err(), context.Canceled) || context.Cause(c) != lost || context.Cause(child) != lost {
		t.Fatalf("after the loss: Err %v, Cause %v, child's cause %v", c.Err(), context.Cause(c), context.Cause(child))
	}
	if c.Value(ctxKey{}) != "v" {
		t.Fatal("the parent's values stay")
	}
	c.end()
	if context.Cause(c) != lost {
		t.Fatal("the end keeps the loss as the cause")
	}

	// Lost before anyone asked: the child made then is lost already.
	c = newHeldCtx(context.Background(), "slot")
	c.lose(lost)
	if !errors.Is(c.Err(), context.Canceled) || !errors.Is(context.Cause(c), ErrLost) {
		t.Fatalf("lost first: Err %v, Cause %v", c.Err(), context.Cause(c))
	}

	// The parent's end, before the child was made: the parent's error and cause.
	cause := errors.New("shutting down")
	p2, cancel2 := context.WithCancelCause(context.Background())
	c = newHeldCtx(p2, "lease")
	cancel2(cause)
	if !errors.Is(c.Err(), context.Canceled) || context.Cause(c) != cause {
		t.Fatalf("parent ended: Err %v, Cause %v", c.Err(), context.Cause(c))
	}
	<-c.Done()

	// The end of the hold ends the ctx, without a cause of its own.
	c = newHeldCtx(context.Background(), "lease")
	c.end()
	<-c.Done()
	if !errors.Is(c.Err(), context.Canceled) || !errors.Is(context.Cause(c), context.Canceled) {
		t.Fatalf("ended: Err %v, Cause %v", c.Err(), context.Cause(c))
	}
}
