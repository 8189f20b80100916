//go:build leasehold_testing

package locks

// The Go runner of the shared scenarios (spec-tests/scenarios/*.json),
// mirroring spec-tests/src/runner.rs through this package's API: each
// `hold` runs Hold in a goroutine whose function keeps the key until the
// scenario's `end`. Calls cross threads here, so "granted", "failed" and
// "lost" are read by polling in real time up to a bound, and "waiting" or
// "not lost" after a short real-time pause; the virtual clock moves with
// VirtualClock.Advance, pausing after each timer it fires.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
)

const (
	// bound is the longest real time the runner waits for an outcome.
	bound = 5 * time.Second
	// advancePause is the real time left to the runtime after each timer the clock fires.
	advancePause = 2 * time.Millisecond
)

// functionError is the held function's own error (`"by": "error"`).
type functionError struct{ message string }

func (e *functionError) Error() string { return e.message }

// panicMark is what the held function panics with (`"by": "panic"`).
type panicMark struct{ message string }

type endCmd struct {
	by, message string
}

// outcome is how a call running in a goroutine ended.
type outcome struct {
	held     bool // TryHold's answer
	err      error
	panicked bool
	goexit   bool
}

// actor is a scenario's holder: of a key (Hold, TryHold) or of a manual lease.
type actor struct {
	manual  bool
	cancel  context.CancelFunc
	granted chan struct{} // closed when the held function starts
	lease   *Lease
	fnCtx   context.Context
	end     chan endCmd
	done    chan outcome
	result  *outcome
	ended   bool
	mlease  *Lease
	mdone   chan manualResult
	merr    error
}

type manualResult struct {
	lease *Lease
	err   error
}

func newKeyActor(cancel context.CancelFunc) *actor {
	return &actor{cancel: cancel, granted: make(chan struct{}), end: make(chan endCmd, 1), done: make(chan outcome, 1)}
}

// held is the function every key holder runs: it keeps the key until `end`.
func (a *actor) held(ctx context.Context, lease *Lease) error {
	a.lease, a.fnCtx = lease, ctx
	close(a.granted)
	cmd := <-a.end
	switch cmd.by {
	case "error":
		return &functionError{cmd.message}
	case "panic":
		panic(panicMark{cmd.message})
	case "cancel":
		runtime.Goexit()
	}
	return nil
}

// start runs call in a goroutine, reporting how it ended (a panic or a
// Goexit going on out of Hold included).
func (a *actor) start(call func() (bool, error)) {
	go func() {
		returned := false
		defer func() {
			if r := recover(); r != nil {
				a.done <- outcome{panicked: true}
				return
			}
			if !returned {
				a.done <- outcome{goexit: true}
			}
		}()
		held, err := call()
		returned = true
		a.done <- outcome{held: held, err: err}
	}()
}

func isGranted(a *actor) bool {
	select {
	case <-a.granted:
		return true
	default:
		return false
	}
}

// phase: "waiting", "granted", "ended", "not_held" or "error <Code>".
func (a *actor) phase() string {
	if a.manual {
		if a.mlease == nil && a.merr == nil {
			select {
			case r := <-a.mdone:
				a.mlease, a.merr = r.lease, r.err
			default:
			}
		}
		switch {
		case a.mlease != nil:
			return "granted"
		case errors.Is(a.merr, errNotHeld):
			return "not_held"
		case a.merr != nil:
			return errorLabel(a.merr)
		}
		return "waiting"
	}
	if a.ended {
		return "ended"
	}
	if isGranted(a) {
		return "granted"
	}
	if a.result == nil {
		select {
		case r := <-a.done:
			a.result = &r
		default:
		}
	}
	if a.result != nil {
		if a.result.err != nil {
			return errorLabel(a.result.err)
		}
		if !a.result.held {
			return "not_held"
		}
	}
	return "waiting"
}

func errorLabel(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return "error " + string(e.Code)
	}
	return "error " + err.Error()
}

type lockEntry struct {
	name string
	opts []Option
	lock *Lock
}

type world struct {
	server  string
	spec    storeSpec
	clock   *VirtualClock
	store   *Store
	locks   map[string]*lockEntry
	holders map[string]*actor
	fences  map[string]uint64
}

func newWorld(spec storeSpec, server string) (*world, error) {
	w := &world{server: server, spec: spec, clock: NewVirtualClock(),
		locks: map[string]*lockEntry{}, holders: map[string]*actor{}, fences: map[string]uint64{}}
	if server == "" {
		w.store = w.openStore()
		return w, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	store, err := Connect(ctx, server)
	w.store = store
	return w, err
}

func (w *world) openStore() *Store {
	return MemoryWith(MemoryOptions{Clock: w.clock, Renewal: *w.spec.Renewal, NoPush: !*w.spec.Push})
}

// settle lets what the store pushed arrive before a negative check.
func (w *world) settle() {
	if w.server != "" {
		time.Sleep(150 * time.Millisecond)
	} else {
		time.Sleep(40 * time.Millisecond)
	}
}

// await polls until cond holds or the bound passes.
func await(cond func() bool) bool {
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// phaseOf reads a holder's phase, waiting out a "waiting" first unless the
// step expects "waiting" (then a settle decides), and records its fence.
func (w *world) phaseOf(name string, expectWaiting bool) (string, error) {
	a, ok := w.holders[name]
	if !ok {
		return "", fmt.Errorf("no holder %q", name)
	}
	if expectWaiting {
		w.settle()
	} else {
		await(func() bool { return a.phase() != "waiting" })
	}
	p := a.phase()
	if p == "granted" {
		if _, seen := w.fences[name]; !seen {
			if a.manual {
				w.fences[name] = a.mlease.Fence
			} else {
				w.fences[name] = a.lease.Fence
			}
		}
	}
	return p, nil
}

func compare(want, got string) error {
	if want != got {
		return fmt.Errorf("expected %s, got %s", want, got)
	}
	return nil
}

func expected(s step, def string) string {
	switch {
	case s.ExpectError != nil:
		return "error " + *s.ExpectError
	case s.Expect != nil:
		return *s.Expect
	}
	return def
}

func (w *world) newHolder(name string) error {
	if _, ok := w.holders[name]; ok {
		return fmt.Errorf("holder %q exists already", name)
	}
	return nil
}

// optionDur parses an optional duration of a call; its failure is the call's InvalidTtl.
func optionDur(d *string) (*time.Duration, error) {
	if d == nil {
		return nil, nil
	}
	v, err := ParseDuration(*d)
	return &v, err
}

func (w *world) lock(alias string) (*lockEntry, error) {
	l, ok := w.locks[alias]
	if !ok {
		return nil, fmt.Errorf("no lock %q was opened", alias)
	}
	return l, nil
}

func (w *world) keyHolder(name string) (*actor, error) {
	a, ok := w.holders[name]
	if !ok || a.manual {
		return nil, fmt.Errorf("%q is no holder of a key", name)
	}
	return a, nil
}

// started checks a call that may wait, and unregisters a holder that got nothing.
func (w *world) started(s step) error {
	want := expected(s, "")
	got, err := w.phaseOf(s.Holder, want == "waiting")
	if err != nil {
		return err
	}
	if got != "granted" && got != "waiting" {
		delete(w.holders, s.Holder)
	}
	return compare(want, got)
}

func (w *world) run(s step) error {
	switch s.Step {
	case "open_lock":
		if _, ok := w.locks[s.Lock]; ok {
			return fmt.Errorf("lock %q is open already", s.Lock)
		}
		e := &lockEntry{name: s.Lock}
		if s.Name != nil {
			e.name = *s.Name
		}
		var err error
		for _, o := range []struct {
			d   *string
			opt func(time.Duration) Option
		}{{s.TTL, TTL}, {s.MaxHold, MaxHold}, {s.Wait, Wait}, {s.Margin, Margin}} {
			d, perr := optionDur(o.d)
			if perr != nil {
				err = perr
				break
			}
			if d != nil {
				e.opts = append(e.opts, o.opt(*d))
			}
		}
		if err == nil {
			e.lock, err = OpenLock(w.store, e.name, e.opts...)
		}
		got := "ok"
		if err != nil {
			got = errorLabel(err)
		} else {
			w.locks[s.Lock] = e
		}
		return compare(expected(s, "ok"), got)
	case "hold", "try_hold":
		if err := w.newHolder(s.Holder); err != nil {
			return err
		}
		l, err := w.lock(s.Lock)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithCancel(context.Background())
		a := newKeyActor(cancel)
		w.holders[s.Holder] = a
		wait, werr := optionDur(s.Wait)
		key := s.Key
		a.start(func() (bool, error) {
			if werr != nil {
				return false, werr
			}
			if s.Step == "try_hold" {
				return l.lock.TryHold(ctx, key, a.held)
			}
			var opts []Option
			if wait != nil {
				opts = append(opts, Wait(*wait))
			}
			return true, l.lock.Hold(ctx, key, a.held, opts...)
		})
		return w.started(s)
	case "try_acquire", "acquire":
		if err := w.newHolder(s.Holder); err != nil {
			return err
		}
		ctx, cancel := context.WithCancel(context.Background())
		a := &actor{manual: true, cancel: cancel, mdone: make(chan manualResult, 1)}
		w.holders[s.Holder] = a
		ttl, terr := ParseDuration(*s.TTL)
		wait, werr := optionDur(s.Wait)
		store, name := w.store, *s.Name
		go func() {
			if err := errors.Join(terr, werr); err != nil {
				a.mdone <- manualResult{err: err}
				return
			}
			if s.Step == "try_acquire" {
				lease, held, err := store.TryLock(ctx, name, ttl)
				if err == nil && !held {
					err = errNotHeld
				}
				a.mdone <- manualResult{lease, err}
				return
			}
			var opts []Option
			if wait != nil {
				opts = append(opts, Wait(*wait))
			}
			lease, err := store.Lock(ctx, name, ttl, opts...)
			a.mdone <- manualResult{lease, err}
		}()
		return w.started(s)
	case "end":
		return w.endStep(s)
	case "cancel":
		a, ok := w.holders[s.Holder]
		if !ok || a.phase() != "waiting" {
			return fmt.Errorf("%q is not waiting", s.Holder)
		}
		a.cancel()
		w.settle()
		return nil
	case "expect_granted", "expect_waiting":
		want := "granted"
		if s.Step == "expect_waiting" {
			want = "waiting"
		}
		got, err := w.phaseOf(s.Holder, want == "waiting")
		if err != nil {
			return err
		}
		return compare(want, got)
	case "expect_failed":
		got, err := w.phaseOf(s.Holder, false)
		if err != nil {
			return err
		}
		return compare("error "+s.Error, got)
	case "expect_lost", "expect_not_lost":
		return w.expectLost(s)
	case "expect_remaining":
		w.settle()
		a, err := w.keyHolder(s.Holder)
		if err != nil || a.lease == nil {
			return fmt.Errorf("%q was never granted a key", s.Holder)
		}
		left, has := a.lease.Remaining()
		got := "none"
		if has {
			got = left.String()
		}
		want := "none"
		if s.Remaining != "none" {
			d, err := ParseDuration(s.Remaining)
			if err != nil {
				return err
			}
			want = d.String()
		}
		return compare(want+" left", got+" left")
	case "expect_fence_greater":
		later, ok1 := w.fences[s.Holder]
		earlier, ok2 := w.fences[s.Than]
		if !ok1 || !ok2 {
			return fmt.Errorf("%q or %q was never granted", s.Holder, s.Than)
		}
		if later <= earlier {
			return fmt.Errorf("%q's fence %d is not larger than %q's %d", s.Holder, later, s.Than, earlier)
		}
		return nil
	case "advance":
		d, err := ParseDuration(*s.By)
		if err != nil {
			return err
		}
		return w.clock.Advance(d, advancePause)
	case "extend", "release":
		return w.manualCalls(s)
	case "close":
		err := w.store.Close()
		w.settle()
		return err
	case "reopen":
		if err := w.store.Close(); err != nil {
			return err
		}
		w.settle()
		w.store = w.openStore()
		for alias, e := range w.locks {
			l, err := OpenLock(w.store, e.name, e.opts...)
			if err != nil {
				return fmt.Errorf("lock %q does not open again: %w", alias, err)
			}
			e.lock = l
		}
		return nil
	}
	return fmt.Errorf("unknown step %q", s.Step)
}

// errNotHeld stands for TryLock's "not held" answer among errors.
var errNotHeld = errors.New("not held")

func (w *world) endStep(s step) error {
	a, err := w.keyHolder(s.Holder)
	if err != nil {
		return err
	}
	if p := a.phase(); p != "granted" {
		return fmt.Errorf("%q holds nothing to end: %s", s.Holder, p)
	}
	cmd := endCmd{by: "return", message: "the held function failed"}
	if s.By != nil {
		cmd.by = *s.By
	}
	if s.Message != nil {
		cmd.message = *s.Message
	}
	a.ended = true
	a.end <- cmd
	var out outcome
	select {
	case out = <-a.done:
	case <-time.After(bound):
		return fmt.Errorf("hold did not return within %s", bound)
	}
	var got string
	var fe *functionError
	switch {
	case out.panicked:
		got = "panic"
	case out.goexit:
		got = "cancelled"
	case out.err == nil:
		got = "ok"
	case errors.As(out.err, &fe) && out.err == error(fe):
		got = "function_error"
	default:
		got = errorLabel(out.err)
	}
	if err := compare(expected(s, "ok"), got); err != nil {
		return fmt.Errorf("%w (%v)", err, out.err)
	}
	if s.ExpectCause != nil {
		if !errors.As(out.err, &fe) || fe.message != *s.ExpectCause {
			return fmt.Errorf("expected the function's error %q as the cause of %v", *s.ExpectCause, out.err)
		}
	}
	return nil
}

func (w *world) expectLost(s step) error {
	a, err := w.keyHolder(s.Holder)
	if err != nil || a.lease == nil {
		return fmt.Errorf("%q was never granted a key", s.Holder)
	}
	lease, ctx := a.lease, a.fnCtx
	told := func() bool { return errors.Is(context.Cause(ctx), ErrLost) }
	if s.Step == "expect_not_lost" {
		w.settle()
		if lease.Lost() || told() {
			return fmt.Errorf("the lease was lost (%s; ctx cause %v)", lease.LossReason(), context.Cause(ctx))
		}
		return nil
	}
	// LOCK-09: the loss reaches the function as its ctx, cancelled with cause ErrLost.
	await(func() bool { return lease.Lost() && told() })
	if got := lease.LossReason(); got != LossReason(s.Reason) {
		return fmt.Errorf("expected the lease lost %s, got %q", s.Reason, got)
	}
	if !told() {
		return fmt.Errorf("the loss did not reach the function's ctx: cause %v", context.Cause(ctx))
	}
	var e *Error
	if !errors.As(context.Cause(ctx), &e) || e.Reason != LossReason(s.Reason) {
		return fmt.Errorf("the ctx's cause %v does not say %s", context.Cause(ctx), s.Reason)
	}
	if left, has := lease.Remaining(); !has || left != 0 {
		return fmt.Errorf("a lost lease has %v left (%v), not zero", left, has)
	}
	return nil
}

// manualCalls runs extend or release from `tasks` goroutines at once (MANUAL-06).
func (w *world) manualCalls(s step) error {
	a, ok := w.holders[s.Holder]
	if !ok || !a.manual || a.phase() != "granted" {
		return fmt.Errorf("%q has no manual lease", s.Holder)
	}
	tasks := 1
	if s.Tasks != nil {
		tasks = *s.Tasks
	}
	var by time.Duration
	var byErr error
	if s.By != nil {
		by, byErr = ParseDuration(*s.By)
	}
	results := make([]error, tasks)
	var wg sync.WaitGroup
	for i := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch {
			case byErr != nil:
				results[i] = byErr
			case s.Step == "extend":
				results[i] = a.mlease.Extend(context.Background(), by)
			default:
				results[i] = a.mlease.Unlock(context.Background())
			}
		}()
	}
	wg.Wait()
	want := expected(s, "ok")
	for i, err := range results {
		got := "ok"
		if err != nil {
			got = errorLabel(err)
		}
		if err := compare(want, got); err != nil {
			return fmt.Errorf("task %d: %w", i, err)
		}
	}
	return nil
}

// finish lets every goroutine of the scenario end: the store closes (waiting
// calls fail Closed) and every function still holding returns.
func (w *world) finish() {
	_ = w.store.Close()
	for _, a := range w.holders {
		if !a.manual && !a.ended && isGranted(a) {
			a.ended = true
			a.end <- endCmd{by: "return"}
		}
		if a.manual && a.mlease != nil {
			_ = a.mlease.Close()
		}
		if a.cancel != nil {
			a.cancel()
		}
	}
}

// runScenario runs sc on the embedded store (server "") or on the server store at server.
func runScenario(sc *scenario, server string) error {
	w, err := newWorld(sc.Store, server)
	if err != nil {
		return fmt.Errorf("scenario %s: %w", sc.ID, err)
	}
	defer w.finish()
	for i, s := range sc.Steps {
		if err := w.run(s); err != nil {
			return fmt.Errorf("scenario %s: step %d %s: %w", sc.ID, i, s.raw, err)
		}
	}
	return nil
}
