/* The C smoke test of the Leasehold ABI: a memory store, a hold, its fence,
 * a release, the calls that return at once and complete through a
 * callback (done at once, later, cancelled), many keys at once (LOCK-22),
 * manual leases, slot leases, a held slot (renewed, released with
 * what it issued, lost), ID generators (unique, increasing, NotReady and
 * the wait on a virtual clock, Overflow, use after close), cancellation from another thread, loss callbacks,
 * and the error paths of ERR-03 (NULL pointers, invalid UTF-8,
 * double free, use after close, a panic). `make test` runs it under
 * valgrind, which must report no leak and no error. Exit 0: every check passed. */

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "leasehold.h"

static int failures = 0;

#define CHECK(cond)                                                    \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
              #cond);                                                  \
      failures++;                                                      \
    }                                                                  \
  } while (0)

/* Expects `err` to carry `code`, then frees it. */
static void expect_code(lh_error *err, lh_code code, int line) {
  lh_code got = lh_error_code(err);
  if (got != code) {
    fprintf(stderr, "smoke.c:%d: expected %s, got %s (%s)\n", line,
            lh_code_name(code), lh_code_name(got), lh_error_message(err));
    failures++;
  }
  lh_error_free(err);
}
#define EXPECT(call, code) expect_code((call), (code), __LINE__)
#define OK(call) EXPECT(call, LH_OK)

#define S(text) (const uint8_t *)(text), strlen(text)

static const int64_t SECOND = 1000000000;

struct waiter {
  lh_store store;
  lh_cancel cancel;
  lh_code got;
};

/* Waits for a manual lease someone else holds, until cancelled. */
static void *acquire_until_cancelled(void *arg) {
  struct waiter *w = arg;
  lh_manual lease = {0};
  lh_error *err = lh_store_acquire(w->store, S("busy"), 10 * SECOND, false, 0,
                                   w->cancel, &lease);
  w->got = lh_error_code(err);
  lh_error_free(err);
  return NULL;
}

static atomic_int losses = 0;
static _Atomic lh_loss_reason last_reason = LH_REASON_NONE;

static void on_lost(uint64_t user, lh_loss_reason reason) {
  CHECK(user == 42);
  losses++;
  last_reason = reason;
}

static void holds(lh_store store) {
  lh_lock lock = {0};
  lh_lock_options options = {.has_ttl = true, .ttl_ns = 30 * SECOND};
  OK(lh_lock_open(store, S("summaries"), &options, &lock));

  lh_holding a = {0};
  uint64_t fence = 0;
  OK(lh_lock_begin(lock, S("chat-1"), NULL, (lh_cancel){0}, &a, &fence));
  CHECK(fence > 0);

  lh_lease_info info;
  OK(lh_holding_info(a, &info));
  CHECK(info.fence == fence);
  CHECK(!info.lost);
  CHECK(!info.has_remaining); /* an embedded lease without maxHold */

  /* LOCK-17: the key is held, so tryHold gets nothing. */
  lh_holding b = {0};
  bool held = true;
  OK(lh_lock_try_begin(lock, S("chat-1"), (lh_cancel){0}, &b, &held, NULL));
  CHECK(!held);

  /* LOCK-18: a bounded wait in line ends WaitTimeout. */
  lh_call_options wait = {.has_wait = true, .wait_ns = SECOND / 100};
  EXPECT(lh_lock_begin(lock, S("chat-1"), &wait, (lh_cancel){0}, &b, NULL),
         LH_WAIT_TIMEOUT);

  OK(lh_holding_end(a));
  /* ERR-03: ending twice is an error code, not a double free. */
  EXPECT(lh_holding_end(a), LH_CLOSED);
  EXPECT(lh_holding_info(a, &info), LH_CLOSED);

  /* The key is free again, with a larger fence (LOCK-02). */
  uint64_t next = 0;
  OK(lh_lock_try_begin(lock, S("chat-1"), (lh_cancel){0}, &b, &held, &next));
  CHECK(held);
  CHECK(next > fence);
  bool lost = true;
  lh_cancel cancel = {0};
  OK(lh_cancel_new(&cancel));
  OK(lh_cancel_fire(cancel));
  EXPECT(lh_holding_wait_lost(b, cancel, &lost), LH_CANCELLED);
  OK(lh_cancel_free(cancel));
  OK(lh_holding_end(b));

  OK(lh_lock_free(lock));
  EXPECT(lh_lock_free(lock), LH_CLOSED);
}

/* What an lh_done_fn received, for a thread to wait on. */
struct completion {
  pthread_mutex_t mu;
  pthread_cond_t cond;
  int calls;
  lh_outcome outcome;
};

static void completed(uint64_t user, lh_outcome outcome) {
  struct completion *c = (struct completion *)(uintptr_t)user;
  pthread_mutex_lock(&c->mu);
  c->calls++;
  c->outcome = outcome;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->mu);
}

/* Waits for the callback, then gives its outcome. */
static lh_outcome await_completion(struct completion *c) {
  pthread_mutex_lock(&c->mu);
  while (c->calls == 0) pthread_cond_wait(&c->cond, &c->mu);
  lh_outcome o = c->outcome;
  pthread_mutex_unlock(&c->mu);
  return o;
}

#define COMPLETION \
  {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, {0}}

static void async_calls(lh_store store) {
  lh_lock lock = {0};
  OK(lh_lock_open(store, S("async"), NULL, &lock));

  /* A free key: done in the call, no callback. */
  struct completion first = COMPLETION;
  lh_outcome now = {0};
  CHECK(!lh_lock_begin_async(lock, S("k"), NULL, (lh_cancel){0}, completed,
                             (uint64_t)(uintptr_t)&first, &now));
  CHECK(now.error == NULL);
  CHECK(now.held && now.handle != 0 && now.fence > 0);
  lh_holding a = {now.handle};

  /* A held key: the call goes on, and completes when the key is ended. */
  struct completion second = COMPLETION;
  lh_outcome later = {0};
  CHECK(lh_lock_begin_async(lock, S("k"), NULL, (lh_cancel){0}, completed,
                            (uint64_t)(uintptr_t)&second, &later));
  /* LOCK-18: a third in line, cancelled, ends LH_CANCELLED. */
  struct completion third = COMPLETION;
  lh_cancel cancel = {0};
  OK(lh_cancel_new(&cancel));
  CHECK(lh_lock_begin_async(lock, S("k"), NULL, cancel, completed,
                            (uint64_t)(uintptr_t)&third, &later));
  OK(lh_cancel_fire(cancel));
  lh_outcome cancelled = await_completion(&third);
  EXPECT(cancelled.error, LH_CANCELLED);
  CHECK(cancelled.handle == 0);
  OK(lh_cancel_free(cancel));
  usleep(20000);
  CHECK(second.calls == 0);
  OK(lh_holding_end(a));
  lh_outcome granted = await_completion(&second);
  CHECK(granted.error == NULL);
  CHECK(granted.held && granted.fence > now.fence);
  CHECK(first.calls == 0 && second.calls == 1 && third.calls == 1);

  /* LOCK-17: tryHold of the held key, through the callback (no `now`). */
  struct completion tried = COMPLETION;
  CHECK(lh_lock_try_begin_async(lock, S("k"), (lh_cancel){0}, completed,
                                (uint64_t)(uintptr_t)&tried, NULL));
  lh_outcome not_held = await_completion(&tried);
  CHECK(not_held.error == NULL && !not_held.held && not_held.handle == 0);

  /* The end, done at once on the embedded store; a second end: closed. */
  lh_outcome ended = {0};
  CHECK(!lh_holding_end_async((lh_holding){granted.handle}, NULL, 0, &ended));
  CHECK(ended.error == NULL);
  CHECK(!lh_holding_end_async((lh_holding){granted.handle}, NULL, 0, &ended));
  EXPECT(ended.error, LH_CLOSED);

  /* ERR-03: bad input comes back as the outcome, never a crash. */
  lh_outcome bad = {0};
  CHECK(!lh_lock_begin_async((lh_lock){0}, S("k"), NULL, (lh_cancel){0},
                             completed, 0, &bad));
  EXPECT(bad.error, LH_INVALID_ARGUMENT);
  CHECK(!lh_lock_begin_async(lock, (const uint8_t *)"\xff", 1, NULL,
                             (lh_cancel){0}, completed, 0, &bad));
  EXPECT(bad.error, LH_INVALID_ARGUMENT);

  /* A manual lease, done at once. */
  lh_outcome manual = {0};
  CHECK(!lh_store_acquire_async(store, S("async-manual"), 5 * SECOND, false, 0,
                                (lh_cancel){0}, completed, 0, &manual));
  CHECK(manual.error == NULL && manual.held && manual.fence > 0);
  OK(lh_manual_release((lh_manual){manual.handle}, (lh_cancel){0}));
  OK(lh_manual_free((lh_manual){manual.handle}));

  OK(lh_lock_free(lock));
}

/* The packed keys of lh_lock_begin_many: their bytes one after another. */
struct keys {
  uint8_t bytes[256];
  size_t lens[16];
  size_t len;
  size_t count;
};

static struct keys pack(const char *const *names, size_t count) {
  struct keys k = {.len = 0, .count = count};
  for (size_t i = 0; i < count; i++) {
    size_t n = strlen(names[i]);
    memcpy(k.bytes + k.len, names[i], n);
    k.lens[i] = n;
    k.len += n;
  }
  return k;
}
#define KEYS(k) (k).bytes, (k).len, (k).lens, (k).count

/* Whether `key` of `lock` is free now (then held and released again). */
static bool free_now(lh_lock lock, const char *key) {
  lh_holding h = {0};
  bool held = false;
  OK(lh_lock_try_begin(lock, S(key), (lh_cancel){0}, &h, &held, NULL));
  if (held) OK(lh_holding_end(h));
  return held;
}

/* Whether `key` of `lock` is free within a second: the leases a failed
 * begin-many took are released in the background. */
static bool free_soon(lh_lock lock, const char *key) {
  lh_holding h = {0};
  lh_call_options wait = {.has_wait = true, .wait_ns = SECOND};
  lh_error *err = lh_lock_begin(lock, S(key), &wait, (lh_cancel){0}, &h, NULL);
  bool held = err == NULL;
  lh_error_free(err);
  if (held) OK(lh_holding_end(h));
  return held;
}

/* LOCK-22: many keys at once, all or none; the holdings copied out of
 * the async form's lh_holdings; all ended at once; and ERR-03's bad input. */
static void many(lh_store store) {
  lh_lock lock = {0};
  OK(lh_lock_open(store, S("many"), NULL, &lock));
  const char *abc[] = {"a", "b", "c"};
  struct keys k = pack(abc, 3);

  /* The blocking form: each key a lease of its own, with its own fence. */
  lh_holding h[3] = {{0}};
  uint64_t fences[3] = {0};
  OK(lh_lock_begin_many(lock, KEYS(k), NULL, (lh_cancel){0}, h, fences));
  CHECK(fences[0] > 0 && fences[1] > 0 && fences[2] > 0);
  CHECK(fences[0] != fences[1] && fences[1] != fences[2] &&
        fences[0] != fences[2]);
  lh_lease_info info;
  OK(lh_holding_info(h[1], &info));
  CHECK(info.fence == fences[1]);
  CHECK(!free_now(lock, "b"));
  OK(lh_holding_end_all(h, 3));
  CHECK(free_now(lock, "a") && free_now(lock, "b") && free_now(lock, "c"));
  /* ERR-03: ending them again, or reading one, is closed. */
  EXPECT(lh_holding_end_all(h, 3), LH_CLOSED);
  EXPECT(lh_holding_info(h[0], &info), LH_CLOSED);

  /* The async form, done at once: an lh_holdings to copy them out of. */
  lh_outcome now = {0};
  CHECK(!lh_lock_begin_many_async(lock, KEYS(k), NULL, (lh_cancel){0},
                                  completed, 0, &now));
  CHECK(now.error == NULL && now.held && now.handle != 0);
  lh_holdings batch = {now.handle};
  EXPECT(lh_holdings_take(batch, h, fences, 2), LH_INVALID_ARGUMENT);
  EXPECT(lh_holdings_take(batch, NULL, fences, 3), LH_INVALID_ARGUMENT);
  EXPECT(lh_holding_end((lh_holding){batch.id}), LH_INVALID_ARGUMENT);
  OK(lh_holdings_take(batch, h, NULL, 3));
  EXPECT(lh_holdings_take(batch, h, NULL, 3), LH_CLOSED);
  EXPECT(lh_holdings_free(batch), LH_CLOSED);
  OK(lh_holding_info(h[2], &info));
  CHECK(info.fence > fences[2]); /* LOCK-02: a later grant of "c" */
  lh_outcome ended = {0};
  CHECK(!lh_holding_end_all_async(h, 3, NULL, 0, &ended));
  CHECK(ended.error == NULL);

  /* All or none: "b" is held elsewhere, so the call waits, times out, and
   * leaves "a" and "c" free at once. */
  lh_holding b = {0};
  OK(lh_lock_begin(lock, S("b"), NULL, (lh_cancel){0}, &b, NULL));
  lh_call_options wait = {.has_wait = true, .wait_ns = SECOND / 100};
  EXPECT(lh_lock_begin_many(lock, KEYS(k), &wait, (lh_cancel){0}, h, NULL),
         LH_WAIT_TIMEOUT);
  CHECK(free_soon(lock, "a") && free_soon(lock, "c"));

  /* Cancelled while in line for "b": fails, takes nothing, leaves the line. */
  struct completion waiting = COMPLETION;
  lh_cancel cancel = {0};
  OK(lh_cancel_new(&cancel));
  CHECK(lh_lock_begin_many_async(lock, KEYS(k), NULL, cancel, completed,
                                 (uint64_t)(uintptr_t)&waiting, &now));
  usleep(20000);
  CHECK(waiting.calls == 0);
  OK(lh_cancel_fire(cancel));
  lh_outcome cancelled = await_completion(&waiting);
  EXPECT(cancelled.error, LH_CANCELLED);
  CHECK(cancelled.handle == 0);
  OK(lh_cancel_free(cancel));
  CHECK(free_soon(lock, "a") && free_soon(lock, "c"));
  OK(lh_holding_end(b));
  CHECK(free_now(lock, "b"));

  /* Holdings freed untaken are released (in the background). */
  CHECK(!lh_lock_begin_many_async(lock, KEYS(k), NULL, (lh_cancel){0},
                                  completed, 0, &now));
  CHECK(now.error == NULL);
  OK(lh_holdings_free((lh_holdings){now.handle}));
  CHECK(free_soon(lock, "a") && free_soon(lock, "b") && free_soon(lock, "c"));

  /* No keys: nothing held, nothing to end. */
  OK(lh_lock_begin_many(lock, NULL, 0, NULL, 0, NULL, (lh_cancel){0}, NULL,
                        NULL));
  CHECK(!lh_lock_begin_many_async(lock, NULL, 0, NULL, 0, NULL, (lh_cancel){0},
                                  completed, 0, &now));
  CHECK(now.error == NULL && now.handle != 0);
  OK(lh_holdings_take((lh_holdings){now.handle}, NULL, NULL, 0));
  OK(lh_holding_end_all(NULL, 0));

  /* LOCK-22 and ERR-03: bad keys, and nothing is held after them. */
  const char *twice[] = {"a", "b", "a"};
  struct keys dup = pack(twice, 3);
  EXPECT(lh_lock_begin_many(lock, KEYS(dup), NULL, (lh_cancel){0}, h, NULL),
         LH_INVALID_ARGUMENT);
  const char *empty[] = {"a", ""};
  struct keys blank = pack(empty, 2);
  EXPECT(lh_lock_begin_many(lock, KEYS(blank), NULL, (lh_cancel){0}, h, NULL),
         LH_EMPTY_NAME);
  EXPECT(lh_lock_begin_many(lock, NULL, 2, k.lens, 3, NULL, (lh_cancel){0}, h,
                            NULL),
         LH_INVALID_ARGUMENT);
  EXPECT(lh_lock_begin_many(lock, k.bytes, k.len, NULL, 3, NULL,
                            (lh_cancel){0}, h, NULL),
         LH_INVALID_ARGUMENT);
  EXPECT(lh_lock_begin_many(lock, k.bytes, k.len + 1, k.lens, 3, NULL,
                            (lh_cancel){0}, h, NULL),
         LH_INVALID_ARGUMENT);
  size_t huge[2] = {SIZE_MAX, 2};
  EXPECT(lh_lock_begin_many(lock, k.bytes, 1, huge, 2, NULL, (lh_cancel){0},
                            h, NULL),
         LH_INVALID_ARGUMENT);
  struct keys bad = k;
  bad.bytes[1] = 0xff;
  EXPECT(lh_lock_begin_many(lock, KEYS(bad), NULL, (lh_cancel){0}, h, NULL),
         LH_INVALID_ARGUMENT);
  EXPECT(lh_lock_begin_many(lock, KEYS(k), NULL, (lh_cancel){0}, NULL, NULL),
         LH_INVALID_ARGUMENT);
  EXPECT(lh_lock_begin_many((lh_lock){0}, KEYS(k), NULL, (lh_cancel){0}, h,
                            NULL),
         LH_INVALID_ARGUMENT);
  EXPECT(lh_lock_begin_many((lh_lock){store.id}, KEYS(k), NULL, (lh_cancel){0},
                            h, NULL),
         LH_INVALID_ARGUMENT);
  lh_call_options negative = {.has_wait = true, .wait_ns = -SECOND};
  EXPECT(lh_lock_begin_many(lock, KEYS(k), &negative, (lh_cancel){0}, h, NULL),
         LH_INVALID_TTL);
  lh_outcome refused = {0};
  CHECK(!lh_lock_begin_many_async(lock, KEYS(dup), NULL, (lh_cancel){0},
                                  completed, 0, &refused));
  EXPECT(refused.error, LH_INVALID_ARGUMENT);
  CHECK(refused.handle == 0);
  CHECK(free_now(lock, "a") && free_now(lock, "b") && free_now(lock, "c"));

  /* ERR-03: an end over a bad array ends none of it. */
  OK(lh_lock_begin_many(lock, KEYS(k), NULL, (lh_cancel){0}, h, NULL));
  lh_holding mixed[2] = {h[0], {lock.id}};
  EXPECT(lh_holding_end_all(mixed, 2), LH_INVALID_ARGUMENT);
  lh_holding repeated[2] = {h[0], h[0]};
  EXPECT(lh_holding_end_all(repeated, 2), LH_INVALID_ARGUMENT);
  lh_holding zero[2] = {h[0], {0}};
  EXPECT(lh_holding_end_all(zero, 2), LH_INVALID_ARGUMENT);
  EXPECT(lh_holding_end_all(NULL, 1), LH_INVALID_ARGUMENT);
  CHECK(lh_holding_end_all_async(NULL, 1, completed, 0, &ended) == false);
  EXPECT(ended.error, LH_INVALID_ARGUMENT);
  OK(lh_holding_info(h[0], &info));
  CHECK(!free_now(lock, "a"));
  OK(lh_holding_end_all(h, 3));

  OK(lh_lock_free(lock));
}

static void bad_input(lh_store store) {
  lh_lock lock = {0};
  lh_holding h = {0};
  /* NULL pointers. */
  EXPECT(lh_lock_open(store, NULL, 5, NULL, &lock), LH_INVALID_ARGUMENT);
  EXPECT(lh_lock_open(store, S("l"), NULL, NULL), LH_INVALID_ARGUMENT);
  EXPECT(lh_store_memory(NULL), LH_INVALID_ARGUMENT);
  /* Empty names (NULL with length 0 is the empty string). */
  EXPECT(lh_lock_open(store, NULL, 0, NULL, &lock), LH_EMPTY_NAME);
  /* Invalid UTF-8. */
  const uint8_t bad[] = {'k', 0xff, 0xfe};
  EXPECT(lh_lock_open(store, bad, sizeof bad, NULL, &lock),
         LH_INVALID_ARGUMENT);
  /* LOCK-13: out-of-range durations. */
  lh_lock_options short_ttl = {.has_ttl = true, .ttl_ns = SECOND / 2};
  EXPECT(lh_lock_open(store, S("l"), &short_ttl, &lock), LH_INVALID_TTL);
  lh_lock_options negative = {.has_ttl = true, .ttl_ns = -SECOND};
  EXPECT(lh_lock_open(store, S("l"), &negative, &lock), LH_INVALID_TTL);
  /* Zero and made-up handles. */
  EXPECT(lh_lock_begin((lh_lock){0}, S("k"), NULL, (lh_cancel){0}, &h, NULL),
         LH_INVALID_ARGUMENT);
  EXPECT(lh_lock_begin((lh_lock){1u << 30}, S("k"), NULL, (lh_cancel){0}, &h,
                       NULL),
         LH_INVALID_ARGUMENT);
  /* A handle of another kind. */
  EXPECT(lh_lock_begin((lh_lock){store.id}, S("k"), NULL, (lh_cancel){0}, &h,
                       NULL),
         LH_INVALID_ARGUMENT);
  /* A panic inside the library is an Internal error, not an abort. */
  EXPECT(lh_testing_panic(), LH_INTERNAL);
  /* Error objects: NULL and freed ones are harmless. */
  lh_error *err = lh_store_memory(NULL);
  lh_error_free(err);
  lh_error_free(err);
  CHECK(lh_error_code(err) == LH_INVALID_ARGUMENT);
  lh_error_free(NULL);
  CHECK(lh_error_code(NULL) == LH_OK);
  CHECK(lh_code_name(LH_CODE_COUNT) == NULL);
  CHECK(strcmp(lh_code_name(LH_LOST), "Lost") == 0);
}

static void manual(lh_store store) {
  lh_manual a = {0};
  bool held = false;
  OK(lh_store_try_acquire(store, S("busy"), 10 * SECOND, (lh_cancel){0}, &a,
                          &held));
  CHECK(held);
  uint64_t fence = 0;
  OK(lh_manual_fence(a, &fence));
  CHECK(fence > 0);
  /* MANUAL-01: held by another, not an error. */
  lh_manual b = {0};
  OK(lh_store_try_acquire(store, S("busy"), 10 * SECOND, (lh_cancel){0}, &b,
                          &held));
  CHECK(!held);

  /* LOCK-18 / MANUAL-02: a waiting acquire, cancelled from this thread. */
  struct waiter w = {.store = store, .got = LH_OK};
  OK(lh_cancel_new(&w.cancel));
  pthread_t thread;
  pthread_create(&thread, NULL, acquire_until_cancelled, &w);
  usleep(50 * 1000);
  OK(lh_cancel_fire(w.cancel));
  pthread_join(thread, NULL);
  CHECK(w.got == LH_CANCELLED);
  OK(lh_cancel_free(w.cancel));

  /* MANUAL-03 / MANUAL-04. */
  OK(lh_manual_extend(a, 20 * SECOND, (lh_cancel){0}));
  EXPECT(lh_manual_extend(a, 0, (lh_cancel){0}), LH_INVALID_TTL);
  OK(lh_manual_release(a, (lh_cancel){0}));
  OK(lh_manual_release(a, (lh_cancel){0}));
  EXPECT(lh_manual_extend(a, 20 * SECOND, (lh_cancel){0}), LH_LOST);
  OK(lh_manual_free(a));
  /* ERR-03: a lease freed twice, and used after its free. */
  EXPECT(lh_manual_free(a), LH_CLOSED);
  EXPECT(lh_manual_release(a, (lh_cancel){0}), LH_CLOSED);
}

/* Slot leases: acquire, the lease's fields, renew, release, the
 * next holder's floor, Exhausted, and bad input. */
static void slots(lh_store store) {
  lh_slots ns = {0};
  lh_slots_options options = {.has_limit = true, .limit = 2,
                              .has_offset = true, .offset = 100};
  OK(lh_slots_open(store, S("order-ids"), &options, &ns));

  uint8_t instance[LH_NAME_MAX];
  size_t instance_len = 0;
  OK(lh_owner_new(S("orders"), instance, sizeof instance, &instance_len));
  CHECK(instance_len > 0);

  /* SLOT-01: a new namespace's lowest slot. */
  lh_slot_lease a = {0};
  bool leased = false;
  OK(lh_slots_acquire(ns, S("orders"), instance, instance_len, false, 0,
                      (lh_cancel){0}, &a, &leased));
  CHECK(leased);
  lh_slot_info info;
  OK(lh_slot_lease_info(a, &info));
  CHECK(info.slot == 0);
  CHECK(info.node == 100);
  CHECK(info.fence > 0);
  CHECK(info.floor < info.expires_at);
  CHECK(info.expires_at < info.ceiling);

  /* SLOT-04: a renewal keeps the fence, as a new handle. */
  lh_slot_lease renewed = {0};
  bool ok = false;
  OK(lh_slots_renew(ns, a, (lh_cancel){0}, &renewed, &ok));
  CHECK(ok);
  lh_slot_info again;
  OK(lh_slot_lease_info(renewed, &again));
  CHECK(again.fence == info.fence);
  CHECK(again.slot == info.slot);
  OK(lh_slot_lease_free(renewed));

  /* The preferred slot, then every slot held: Exhausted, not an error. */
  lh_slot_lease b = {0};
  OK(lh_slots_acquire(ns, S("billing"), S("b-1"), true, 1, (lh_cancel){0}, &b,
                      &leased));
  CHECK(leased);
  lh_slot_lease none = {0};
  OK(lh_slots_acquire(ns, S("audit"), S("c-1"), false, 0, (lh_cancel){0},
                      &none, &leased));
  CHECK(!leased);
  CHECK(none.id == 0);

  /* SLOT-05: released having issued up to floor + 7; the next holder's floor. */
  bool released = false;
  uint64_t last_issued = info.floor + 7;
  OK(lh_slots_release(ns, a, last_issued, (lh_cancel){0}, &released));
  CHECK(released);
  OK(lh_slots_release(ns, a, last_issued, (lh_cancel){0}, &released));
  CHECK(released);
  lh_slot_lease c = {0};
  OK(lh_slots_acquire(ns, S("audit"), S("c-1"), false, 0, (lh_cancel){0}, &c,
                      &leased));
  CHECK(leased);
  lh_slot_info next;
  OK(lh_slot_lease_info(c, &next));
  CHECK(next.slot == 0);
  CHECK(next.floor == last_issued);
  CHECK(next.fence > info.fence);
  /* A stale lease releases nothing. */
  OK(lh_slots_release(ns, a, last_issued, (lh_cancel){0}, &released));
  CHECK(!released);

  /* SLOT-02: the namespace's limit is fixed by its first use. */
  lh_slots other = {0};
  lh_slots_options wider = {.has_limit = true, .limit = 8};
  OK(lh_slots_open(store, S("order-ids"), &wider, &other));
  EXPECT(lh_slots_acquire(other, S("x"), S("y"), false, 0, (lh_cancel){0}, &c,
                          &leased),
         LH_NAMESPACE_MISMATCH);
  OK(lh_slots_free(other));

  /* ERR-03: bad input. */
  lh_slots_options zero = {.has_limit = true, .limit = 0};
  EXPECT(lh_slots_open(store, S("z"), &zero, &other), LH_INVALID_ARGUMENT);
  lh_slots_options negative = {.has_ttl = true, .ttl_ns = -SECOND};
  EXPECT(lh_slots_open(store, S("z"), &negative, &other), LH_INVALID_TTL);
  lh_slots_options no_timeout = {.has_timeout = true, .timeout_ns = 0};
  EXPECT(lh_slots_open(store, S("z"), &no_timeout, &other), LH_INVALID_TTL);
  EXPECT(lh_slots_open(store, NULL, 0, NULL, &other), LH_EMPTY_NAME);
  EXPECT(lh_slots_open(store, S("z"), NULL, NULL), LH_INVALID_ARGUMENT);
  EXPECT(lh_slots_acquire(ns, S("x"), S("y"), true, 2, (lh_cancel){0}, &c,
                          &leased),
         LH_INVALID_ARGUMENT);
  EXPECT(lh_slots_acquire(ns, NULL, 0, S("y"), false, 0, (lh_cancel){0}, &c,
                          &leased),
         LH_EMPTY_NAME);
  EXPECT(lh_slots_acquire(ns, S("x"), S("y"), false, 0, (lh_cancel){0}, &c,
                          NULL),
         LH_INVALID_ARGUMENT);
  EXPECT(lh_owner_new(S("orders"), instance, 4, &instance_len),
         LH_INVALID_ARGUMENT);
  CHECK(instance_len > 4);
  EXPECT(lh_owner_new(NULL, 0, instance, sizeof instance, &instance_len),
         LH_EMPTY_NAME);
  OK(lh_owner_check(S("orders"), S("i-1")));
  EXPECT(lh_owner_check(S("orders"), NULL, 0), LH_EMPTY_NAME);
  EXPECT(lh_slot_lease_info((lh_slot_lease){ns.id}, &info),
         LH_INVALID_ARGUMENT);

  /* A cancelled call gives up. */
  lh_cancel cancel = {0};
  OK(lh_cancel_new(&cancel));
  OK(lh_cancel_fire(cancel));
  EXPECT(lh_slots_release(ns, b, 0, cancel, &released), LH_CANCELLED);
  OK(lh_cancel_free(cancel));

  /* ERR-03: a lease freed twice, and used after its free. */
  OK(lh_slot_lease_free(a));
  EXPECT(lh_slot_lease_free(a), LH_CLOSED);
  EXPECT(lh_slots_release(ns, a, 0, (lh_cancel){0}, &released), LH_CLOSED);
  OK(lh_slot_lease_free(b));
  OK(lh_slot_lease_free(c));
  OK(lh_slots_free(ns));
  EXPECT(lh_slots_free(ns), LH_CLOSED);
  EXPECT(lh_slots_acquire(ns, S("x"), S("y"), false, 0, (lh_cancel){0}, &c,
                          &leased),
         LH_CLOSED);
}

/* Moves the clock by ttl/3 `steps` times, each time until the holding's
 * renewal shows (at most 2 s of real time): a step no longer than ttl/3 can
 * never pass the holder's deadline, however late its renewals run. */
static void advance_renewed(lh_clock clock, lh_slot_holding h, int steps,
                            int64_t step_ns) {
  for (int i = 0; i < steps; i++) {
    lh_held_slot_info before, after;
    OK(lh_slot_holding_info(h, &before));
    OK(lh_clock_advance(clock, step_ns, SECOND / 500));
    for (int j = 0; j < 2000; j++) {
      OK(lh_slot_holding_info(h, &after));
      if (after.lost || after.lease.expires_at > before.lease.expires_at) break;
      usleep(1000);
    }
    CHECK(!after.lost);
    CHECK(after.lease.expires_at > before.lease.expires_at);
  }
}

static atomic_int slot_losses = 0;
static _Atomic lh_loss_reason slot_reason = LH_REASON_NONE;

static void on_slot_lost(uint64_t user, lh_loss_reason reason) {
  CHECK(user == 7);
  slot_losses++;
  slot_reason = reason;
}

/* A held slot on a virtual clock: renewed in the background (same fence,
 * later expiry), ended with the largest timestamp issued (the next holder's
 * floor, SLOT-05); nothing when every slot is held (SLOT-01); a slot
 * released behind its holder's back is lost at the next renewal, told by
 * the callback and the wait, and its end fails Lost. */
static void slot_holds(void) {
  lh_clock clock = {0};
  OK(lh_clock_new(&clock));
  lh_memory_options memory = {.clock = clock, .push = true};
  lh_store store = {0};
  OK(lh_store_memory_with(&memory, &store));
  lh_slots ns = {0};
  lh_slots_options options = {.has_limit = true, .limit = 1,
                              .has_ttl = true, .ttl_ns = 3 * SECOND,
                              .has_margin = true, .margin_ns = SECOND / 2};
  OK(lh_slots_open(store, S("held-ids"), &options, &ns));

  lh_slot_holding h = {0};
  bool held = false;
  OK(lh_slots_begin(ns, S("orders"), S("o-1"), false, 0, (lh_cancel){0}, &h,
                    &held));
  CHECK(held);
  lh_held_slot_info first;
  OK(lh_slot_holding_info(h, &first));
  CHECK(first.lease.slot == 0);
  CHECK(first.lease.fence > 0);
  CHECK(!first.lost);
  CHECK(first.last_issued == 0);
  CHECK(first.remaining_ns == (uint64_t)(3 * SECOND - SECOND / 2));

  /* SLOT-01: the only slot is held, so nothing is held. */
  lh_slot_holding none = {0};
  OK(lh_slots_begin(ns, S("billing"), S("b-1"), false, 0, (lh_cancel){0},
                    &none, &held));
  CHECK(!held);
  CHECK(none.id == 0);

  /* Renewed in the background across several ttls. */
  advance_renewed(clock, h, 10, SECOND);
  lh_held_slot_info later;
  OK(lh_slot_holding_info(h, &later));
  CHECK(!later.lost);
  CHECK(later.lease.fence == first.lease.fence);
  CHECK(later.lease.expires_at >= first.lease.expires_at + 9000);
  CHECK(later.lease.ceiling > first.lease.ceiling);
  lh_slot_lease lease = {0};
  OK(lh_slot_holding_lease(h, &lease));
  lh_slot_info current;
  OK(lh_slot_lease_info(lease, &current));
  CHECK(current.expires_at == later.lease.expires_at);
  OK(lh_slot_lease_free(lease));

  uint64_t issued = first.lease.floor + 7;
  OK(lh_slot_holding_issued(h, issued));
  OK(lh_slot_holding_issued(h, first.lease.floor + 3));
  OK(lh_slot_holding_info(h, &later));
  CHECK(later.last_issued == issued);
  OK(lh_slot_holding_on_lost(h, on_slot_lost, 7));
  EXPECT(lh_slot_holding_on_lost(h, on_slot_lost, 7), LH_INVALID_ARGUMENT);
  lh_cancel cancel = {0};
  OK(lh_cancel_new(&cancel));
  OK(lh_cancel_fire(cancel));
  bool lost = true;
  EXPECT(lh_slot_holding_wait_lost(h, cancel, &lost), LH_CANCELLED);
  OK(lh_cancel_free(cancel));
  OK(lh_slot_holding_end(h));
  CHECK(slot_losses == 0);
  /* ERR-03: ending twice, and use after the end. */
  EXPECT(lh_slot_holding_end(h), LH_CLOSED);
  EXPECT(lh_slot_holding_info(h, &later), LH_CLOSED);
  EXPECT(lh_slot_holding_issued(h, issued), LH_CLOSED);
  EXPECT(lh_slot_holding_info((lh_slot_holding){ns.id}, &later),
         LH_INVALID_ARGUMENT);
  EXPECT(lh_slot_holding_info(h, NULL), LH_INVALID_ARGUMENT);

  /* SLOT-05: the next holder's floor is what the holder issued. */
  OK(lh_slots_begin(ns, S("billing"), S("b-1"), false, 0, (lh_cancel){0}, &h,
                    &held));
  CHECK(held);
  OK(lh_slot_holding_info(h, &later));
  CHECK(later.lease.floor == issued);
  CHECK(later.lease.fence > first.lease.fence);

  /* Released behind the holder's back: lost at the next renewal. */
  OK(lh_slot_holding_on_lost(h, on_slot_lost, 7));
  OK(lh_slot_holding_lease(h, &lease));
  bool released = false;
  OK(lh_slots_release(ns, lease, 0, (lh_cancel){0}, &released));
  CHECK(released);
  OK(lh_slot_lease_free(lease));
  OK(lh_clock_advance(clock, 2 * SECOND, SECOND / 500));
  OK(lh_slot_holding_wait_lost(h, (lh_cancel){0}, &lost));
  CHECK(lost);
  for (int i = 0; i < 100 && slot_losses == 0; i++) usleep(1000);
  CHECK(slot_losses == 1);
  CHECK(slot_reason == LH_REASON_UNKNOWN);
  OK(lh_slot_holding_info(h, &later));
  CHECK(later.lost);
  CHECK(later.reason == LH_REASON_UNKNOWN);
  CHECK(later.remaining_ns == 0);
  lh_error *err = lh_slot_holding_end(h);
  CHECK(lh_error_code(err) == LH_LOST);
  CHECK(lh_error_loss_reason(err) == LH_REASON_UNKNOWN);
  lh_error_free(err);
  CHECK(slot_losses == 1);

  /* Bad options: a margin of half the ttl. */
  lh_slots_options wide = {.has_ttl = true, .ttl_ns = 2 * SECOND,
                           .has_margin = true, .margin_ns = SECOND};
  lh_slots other = {0};
  EXPECT(lh_slots_open(store, S("z"), &wide, &other), LH_INVALID_TTL);
  EXPECT(lh_slots_begin(ns, S("x"), S("y"), false, 0, (lh_cancel){0}, &h,
                        NULL),
         LH_INVALID_ARGUMENT);

  /* A slot held while its store closes is lost (Closed) by the time the
   * close returns; the callback may run on this thread, inside the close. */
  OK(lh_slots_begin(ns, S("audit"), S("a-1"), false, 0, (lh_cancel){0}, &h,
                    &held));
  CHECK(held);
  OK(lh_slot_holding_on_lost(h, on_slot_lost, 7));
  OK(lh_store_close(store));
  OK(lh_slot_holding_info(h, &later));
  CHECK(later.lost);
  CHECK(later.reason == LH_REASON_CLOSED);
  for (int i = 0; i < 100 && slot_losses == 1; i++) usleep(1000);
  CHECK(slot_losses == 2);
  CHECK(slot_reason == LH_REASON_CLOSED);
  err = lh_slot_holding_end(h);
  CHECK(lh_error_code(err) == LH_LOST);
  CHECK(lh_error_loss_reason(err) == LH_REASON_CLOSED);
  lh_error_free(err);

  OK(lh_slots_free(ns));
  OK(lh_clock_free(clock));
}

/* ID generators on the real clock: layouts, IDs that strictly increase
 * (IDGEN-03) and carry the node, batches, the waiting form done at once,
 * the slot lease, a second generator of a one-slot namespace refused
 * NotReady until the first closes (IDGEN-01), Overflow, bad input, use
 * after close (Lost) and after free (Closed). */
static void ids(lh_store store) {
  lh_id_layout layout = lh_id_layout_default();
  CHECK(layout.time_bits == 41 && layout.node_bits == 10 &&
        layout.sequence_bits == 12 && layout.tick_ms == 1);
  CHECK(layout.epoch_ms == 1767225600000ull);
  lh_id_layout js = lh_id_layout_js_safe();
  CHECK(js.time_bits + js.node_bits + js.sequence_bits == 53);
  CHECK(lh_id_layout_seconds().tick_ms == 1000);

  lh_ids_options options = {.has_limit = true, .limit = 1,
                            .owner_key = S("orders")};
  lh_ids a = {0};
  OK(lh_ids_open(store, S("ids"), &options, (lh_cancel){0}, &a));
  lh_id_generator_info info;
  OK(lh_ids_info(a, &info));
  CHECK(info.node == 0 && !info.lost && info.last_issued == 0);
  CHECK(info.layout.time_bits == 41 && info.layout.epoch_ms == layout.epoch_ms);

  uint64_t first = 0, second = 0;
  OK(lh_ids_next(a, &first));
  OK(lh_ids_next(a, &second));
  CHECK(second > first);
  lh_id_parts parts;
  OK(lh_id_layout_parts(layout, second, &parts));
  CHECK(parts.node == info.node);
  CHECK(parts.timestamp_ms == layout.epoch_ms + parts.tick);
  OK(lh_ids_info(a, &info));
  CHECK(info.last_issued >= parts.timestamp_ms);

  uint64_t batch[300];
  size_t n = 0;
  OK(lh_ids_next_into(a, batch, 300, &n));
  CHECK(n >= 1 && n <= 300);
  CHECK(batch[0] > second);
  for (size_t i = 1; i < n; i++) CHECK(batch[i] > batch[i - 1]);
  uint64_t batch_last = batch[n - 1];
  OK(lh_ids_next_into(a, NULL, 0, &n));
  CHECK(n == 0);

  /* The waiting form, done at once. */
  lh_outcome now = {0};
  CHECK(!lh_ids_next_async(a, (lh_cancel){0}, completed, 0, &now));
  CHECK(now.error == NULL && now.held && now.fence > batch_last);
  uint64_t waited = now.fence;

  lh_slot_lease lease = {0};
  OK(lh_ids_lease(a, &lease));
  lh_slot_info slot;
  OK(lh_slot_lease_info(lease, &slot));
  CHECK(slot.node == info.node && slot.fence > 0);
  OK(lh_slot_lease_free(lease));
  uint8_t key[LH_NAME_MAX], instance[LH_NAME_MAX];
  size_t key_len = 0, instance_len = 0;
  OK(lh_ids_owner(a, key, sizeof key, &key_len, instance, sizeof instance,
                  &instance_len));
  CHECK(key_len == 6 && memcmp(key, "orders", 6) == 0);
  CHECK(instance_len > 0);
  OK(lh_owner_check(key, key_len, instance, instance_len));
  EXPECT(lh_ids_owner(a, key, sizeof key, &key_len, instance, 1,
                      &instance_len),
         LH_INVALID_ARGUMENT);

  /* IDGEN-01: the one slot is held, so a second generator is refused;
   * once the first closes, the second issues above everything it issued. */
  lh_ids b = {0};
  EXPECT(lh_ids_open(store, S("ids"), &options, (lh_cancel){0}, &b),
         LH_NOT_READY);
  OK(lh_ids_close(a));
  OK(lh_ids_close(a));
  uint64_t after = 0;
  EXPECT(lh_ids_next(a, &after), LH_LOST);
  EXPECT(lh_ids_next_into(a, batch, 3, &n), LH_LOST);
  CHECK(!lh_ids_next_async(a, (lh_cancel){0}, completed, 0, &now));
  EXPECT(now.error, LH_LOST);
  OK(lh_ids_info(a, &info));
  OK(lh_ids_free(a));
  EXPECT(lh_ids_free(a), LH_CLOSED);
  EXPECT(lh_ids_next(a, &after), LH_CLOSED);
  EXPECT(lh_ids_close(a), LH_CLOSED);
  OK(lh_ids_open(store, S("ids"), &options, (lh_cancel){0}, &b));
  OK(lh_ids_next(b, &after));
  CHECK(after > waited);
  /* A generator freed unclosed is sealed and released in the background. */
  OK(lh_ids_free(b));
  lh_outcome opened = {0};
  for (int i = 0; i < 1000; i++) {
    CHECK(!lh_ids_open_async(store, S("ids"), &options, (lh_cancel){0},
                             completed, 0, &opened));
    if (lh_error_code(opened.error) != LH_NOT_READY) break;
    lh_error_free(opened.error);
    opened.error = NULL;
    usleep(1000);
  }
  CHECK(opened.error == NULL && opened.held && opened.fence > 0);
  b = (lh_ids){opened.handle};
  uint64_t last = after;
  OK(lh_ids_next(b, &after));
  CHECK(after > last);
  struct completion closing = COMPLETION;
  lh_outcome closed = {0};
  if (lh_ids_close_async(b, completed, (uint64_t)(uintptr_t)&closing, &closed))
    closed = await_completion(&closing);
  CHECK(closed.error == NULL);
  OK(lh_ids_free(b));

  /* IDGEN-04: a layout whose time range ended long ago: Overflow. */
  lh_ids_options tiny = {.has_layout = true,
                         .layout = {.time_bits = 4, .node_bits = 2,
                                    .sequence_bits = 2, .tick_ms = 1,
                                    .epoch_ms = 0}};
  lh_ids old = {0};
  OK(lh_ids_open(store, S("tiny-ids"), &tiny, (lh_cancel){0}, &old));
  EXPECT(lh_ids_next(old, &after), LH_OVERFLOW);
  EXPECT(lh_ids_next_into(old, batch, 3, &n), LH_OVERFLOW);
  CHECK(!lh_ids_next_async(old, (lh_cancel){0}, completed, 0, &now));
  EXPECT(now.error, LH_OVERFLOW);
  OK(lh_ids_close(old));
  OK(lh_ids_free(old));

  /* ERR-03: bad layouts, bad input, handles of other kinds. */
  lh_ids_options wide = {.has_layout = true, .layout = layout};
  wide.layout.time_bits = 42;
  EXPECT(lh_ids_open(store, S("z-ids"), &wide, (lh_cancel){0}, &b),
         LH_INVALID_ARGUMENT);
  wide.layout = layout;
  wide.layout.tick_ms = 0;
  EXPECT(lh_ids_open(store, S("z-ids"), &wide, (lh_cancel){0}, &b),
         LH_INVALID_ARGUMENT);
  lh_ids_options crowded = {.has_limit = true, .limit = 2000};
  EXPECT(lh_ids_open(store, S("z-ids"), &crowded, (lh_cancel){0}, &b),
         LH_INVALID_ARGUMENT);
  lh_ids_options negative = {.has_max_lead = true, .max_lead_ns = -1};
  EXPECT(lh_ids_open(store, S("z-ids"), &negative, (lh_cancel){0}, &b),
         LH_INVALID_TTL);
  EXPECT(lh_ids_open(store, NULL, 0, NULL, (lh_cancel){0}, &b), LH_EMPTY_NAME);
  EXPECT(lh_ids_open(store, S("z-ids"), NULL, (lh_cancel){0}, NULL),
         LH_INVALID_ARGUMENT);
  lh_ids_options no_key = {.owner_key = NULL, .owner_key_len = 3};
  EXPECT(lh_ids_open(store, S("z-ids"), &no_key, (lh_cancel){0}, &b),
         LH_INVALID_ARGUMENT);
  EXPECT(lh_ids_next((lh_ids){0}, &after), LH_INVALID_ARGUMENT);
  EXPECT(lh_ids_next((lh_ids){store.id}, &after), LH_INVALID_ARGUMENT);
  EXPECT(lh_ids_next_into((lh_ids){store.id}, batch, 3, &n),
         LH_INVALID_ARGUMENT);
  lh_id_layout bad = layout;
  bad.sequence_bits = 0;
  EXPECT(lh_id_layout_parts(bad, 1, &parts), LH_INVALID_ARGUMENT);
  EXPECT(lh_id_layout_parts(layout, 1, NULL), LH_INVALID_ARGUMENT);
  lh_cancel cancel = {0};
  OK(lh_cancel_new(&cancel));
  OK(lh_cancel_fire(cancel));
  EXPECT(lh_ids_open(store, S("z-ids"), NULL, cancel, &b), LH_CANCELLED);
  OK(lh_cancel_free(cancel));
}

/* IDGEN-04 on a virtual clock that only this test moves: with no lead, the
 * tick's sequence used up makes lh_ids_next fail NotReady (retryable) and
 * lh_ids_next_async wait until the clock moves; a cancelled wait ends
 * Cancelled, issuing nothing. */
static void ids_waiting(void) {
  lh_clock clock = {0};
  OK(lh_clock_new(&clock));
  lh_memory_options memory = {.clock = clock, .push = true};
  lh_store store = {0};
  OK(lh_store_memory_with(&memory, &store));
  /* The virtual clock starts in 2024: an epoch before it. */
  lh_id_layout layout = lh_id_layout_default();
  layout.epoch_ms = 1700000000000ull;
  lh_ids_options options = {.has_layout = true, .layout = layout,
                            .has_max_lead = true, .max_lead_ns = 0};
  lh_ids ids = {0};
  OK(lh_ids_open(store, S("waiting-ids"), &options, (lh_cancel){0}, &ids));
  static uint64_t tick[5000];
  size_t n = 0;
  lh_error *err = lh_ids_next_into(ids, tick, 5000, &n);
  if (lh_error_code(err) == LH_NOT_READY) {
    /* The floor's tick is the store's now: the next one comes first. */
    lh_error_free(err);
    OK(lh_clock_advance(clock, SECOND / 1000, SECOND / 1000));
    err = lh_ids_next_into(ids, tick, 5000, &n);
  }
  OK(err);
  /* Every ID of the store's tick, and not one more. */
  size_t total = n;
  while ((err = lh_ids_next_into(ids, tick, 5000, &n)) == NULL) total += n;
  EXPECT(err, LH_NOT_READY);
  CHECK(total == 4096);
  uint64_t id = 0;
  EXPECT(lh_ids_next(ids, &id), LH_NOT_READY);
  CHECK(id == 0);

  struct completion cancelled = COMPLETION;
  lh_cancel cancel = {0};
  OK(lh_cancel_new(&cancel));
  CHECK(lh_ids_next_async(ids, cancel, completed,
                          (uint64_t)(uintptr_t)&cancelled, NULL));
  OK(lh_cancel_fire(cancel));
  lh_outcome gave_up = await_completion(&cancelled);
  EXPECT(gave_up.error, LH_CANCELLED);
  OK(lh_cancel_free(cancel));

  struct completion waited = COMPLETION;
  lh_outcome later = {0};
  CHECK(lh_ids_next_async(ids, (lh_cancel){0}, completed,
                          (uint64_t)(uintptr_t)&waited, &later));
  usleep(20000);
  CHECK(waited.calls == 0);
  OK(lh_clock_advance(clock, SECOND / 1000, SECOND / 1000));
  lh_outcome got = await_completion(&waited);
  CHECK(got.error == NULL && got.held);
  lh_id_parts parts;
  OK(lh_id_layout_parts(layout, got.fence, &parts));
  CHECK(parts.sequence == 0);
  OK(lh_ids_next(ids, &id));
  CHECK(id > got.fence);

  /* The store closed under the generator: Lost. */
  OK(lh_store_close(store));
  EXPECT(lh_ids_next(ids, &id), LH_LOST);
  EXPECT(lh_ids_close(ids), LH_LOST);
  OK(lh_ids_free(ids));
  OK(lh_clock_free(clock));
}

/* lh_lock_begin_watched_async: the begin registers the loss callback (a
 * second registration fails), which a loss then calls; a NULL callback is
 * refused before anything is asked for. */
static void watched_begin(void) {
  lh_store store = {0};
  OK(lh_store_memory(&store));
  lh_lock lock = {0};
  OK(lh_lock_open(store, S("watched"), NULL, &lock));
  lh_outcome bad = {0};
  CHECK(!lh_lock_begin_watched_async(lock, S("k"), NULL, (lh_cancel){0}, NULL,
                                     42, completed, 0, &bad));
  EXPECT(bad.error, LH_INVALID_ARGUMENT);
  lh_outcome now = {0};
  CHECK(!lh_lock_begin_watched_async(lock, S("k"), NULL, (lh_cancel){0},
                                     on_lost, 42, completed, 0, &now));
  CHECK(now.error == NULL && now.held && now.handle != 0 && now.fence > 0);
  lh_holding h = {now.handle};
  EXPECT(lh_holding_on_lost(h, on_lost, 42), LH_INVALID_ARGUMENT);
  int before = losses;
  OK(lh_store_close(store));
  for (int i = 0; i < 100 && losses == before; i++) usleep(1000);
  CHECK(losses == before + 1);
  CHECK(last_reason == LH_REASON_CLOSED);
  EXPECT(lh_holding_end(h), LH_LOST);
  OK(lh_lock_free(lock));
}

static void loss_on_close(void) {
  lh_store store = {0};
  OK(lh_store_memory(&store));
  lh_lock lock = {0};
  OK(lh_lock_open(store, S("l"), NULL, &lock));
  lh_holding h = {0};
  OK(lh_lock_begin(lock, S("k"), NULL, (lh_cancel){0}, &h, NULL));
  OK(lh_holding_on_lost(h, on_lost, 42));
  EXPECT(lh_holding_on_lost(h, on_lost, 42), LH_INVALID_ARGUMENT);
  EXPECT(lh_holding_on_lost(h, NULL, 42), LH_INVALID_ARGUMENT);
  OK(lh_store_close(store));
  bool lost = false;
  OK(lh_holding_wait_lost(h, (lh_cancel){0}, &lost));
  CHECK(lost);
  for (int i = 0; i < 100 && losses == 0; i++) usleep(1000);
  CHECK(losses == 1);
  CHECK(last_reason == LH_REASON_CLOSED);
  /* LOCK-10: the hold fails Lost, with the reason. */
  lh_error *err = lh_holding_end(h);
  CHECK(lh_error_code(err) == LH_LOST);
  CHECK(lh_error_loss_reason(err) == LH_REASON_CLOSED);
  lh_error_free(err);
  /* ERR-03: use after close. */
  lh_lock_options none = {0};
  lh_lock other = {0};
  EXPECT(lh_lock_begin(lock, S("k"), NULL, (lh_cancel){0}, &h, NULL),
         LH_CLOSED);
  EXPECT(lh_lock_open(store, S("l"), &none, &other), LH_CLOSED);
  EXPECT(lh_store_close(store), LH_CLOSED);
  OK(lh_lock_free(lock));
  CHECK(losses == 1);
}

int main(void) {
  CHECK(lh_abi_version() == LH_ABI_VERSION);
  lh_store store = {0};
  OK(lh_store_memory(&store));
  holds(store);
  async_calls(store);
  many(store);
  bad_input(store);
  manual(store);
  slots(store);
  ids(store);
  OK(lh_store_close(store));
  slot_holds();
  ids_waiting();
  loss_on_close();
  watched_begin();
  /* A finalizer's free: the handle goes, nothing blocks, closing it fails. */
  lh_store freed = {0};
  OK(lh_store_memory(&freed));
  OK(lh_store_free(freed));
  EXPECT(lh_store_close(freed), LH_CLOSED);
  EXPECT(lh_store_free(freed), LH_CLOSED);
  /* The runtime's tasks let their stores go on their own threads after the
   * calls above return (a lost holding's keeper, for one): a pause before
   * exiting lets them, or valgrind may find a store's tables still
   * allocated ("possibly lost"; seen once in a clean-clone run of make test,
   * under valgrind's one-thread-at-a-time scheduling). */
  usleep(200 * 1000);
  if (failures != 0) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("leasehold C smoke test: every check passed (library %s)\n",
         lh_version());
  return 0;
}
