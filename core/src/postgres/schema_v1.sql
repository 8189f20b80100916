-- Leasehold's schema on PostgreSQL, version 1 (docs/postgres.md).
-- `@schema@` is the store's schema, quoted; `@channel@` the NOTIFY
-- channel, as a string literal. Every function is one READ COMMITTED
-- transaction when called alone (PG-02), and takes a key's row lock before
-- it reads or changes that key's requests, so each key's changes are one
-- after another.

-- The largest fence handed out whose row was since deleted (PG-04): with
-- the fences of the rows still here, what the fence sequence must not be behind.
CREATE TABLE @schema@.high_water (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    fence bigint NOT NULL
);
INSERT INTO @schema@.high_water VALUES (true, 0);

-- Fences (PG-04) and places in line (first come, first served).
CREATE SEQUENCE @schema@.fence;
CREATE SEQUENCE @schema@.place;

-- One row per key: the row is the key's lock; `holder` names the request
-- that holds it (NULL: free, or its holder ended and nobody took it yet).
CREATE TABLE @schema@.keys (
    lock text NOT NULL,
    key text NOT NULL,
    holder bytea,
    PRIMARY KEY (lock, key)
);

-- Slot leases (PG-03): a namespace's parameters (SLOT-02), and each
-- slot's record (the slot table's, as JSON) with the fence its lease took
-- and a version that every write compares and moves.
CREATE TABLE @schema@.slot_namespaces (
    name text PRIMARY KEY,
    spec text NOT NULL
);
CREATE TABLE @schema@.slots (
    namespace text NOT NULL,
    slot integer NOT NULL,
    record text NOT NULL,
    fence bigint NOT NULL,
    version bigint NOT NULL,
    PRIMARY KEY (namespace, slot)
);

-- Renewal groups (PG-07): a lease in a group lives until the later of its
-- own expiry and its group's.
CREATE TABLE @schema@.groups (
    id bytea PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
CREATE INDEX groups_expiry ON @schema@.groups (expires_at);

-- One row per hold request (PG-05): waiting while `fence` is NULL, held
-- once it has one, over once `ended` says why. A waiting request's
-- `expires_at` is its place's (its store refreshes it while it waits); a
-- held one's is its lease's.
CREATE TABLE @schema@.requests (
    request bytea PRIMARY KEY,
    lock text NOT NULL,
    key text NOT NULL,
    place bigint NOT NULL,
    ttl interval NOT NULL,
    max_hold interval,
    group_id bytea,
    asked_at timestamptz NOT NULL,
    fence bigint,
    granted_at timestamptz,
    expires_at timestamptz NOT NULL,
    revoke_at timestamptz,
    ended text CHECK (ended IN ('released', 'expired', 'revoked', 'gave_up')),
    ended_at timestamptz
);
CREATE INDEX requests_line ON @schema@.requests (lock, key, place)
    WHERE fence IS NULL AND ended IS NULL;
CREATE INDEX requests_group ON @schema@.requests (group_id)
    WHERE group_id IS NOT NULL AND ended IS NULL;
CREATE INDEX requests_ended ON @schema@.requests (ended_at) WHERE ended IS NOT NULL;
CREATE INDEX requests_fence ON @schema@.requests (fence);

-- What a call answers: `answer` is granted, queued, not_held, or why the
-- request is over (released, expired, revoked, gave_up, unknown); a grant
-- has its fence, the time left before its maxHold and before it runs out
-- unless renewed; a waiter its place (`ahead`) and the time left before
-- its holder's lease runs out (when to look again).
CREATE TYPE @schema@.answer AS (
    answer text,
    fence bigint,
    revoke_in_ms bigint,
    ahead bigint,
    expires_in_ms bigint
);

CREATE FUNCTION @schema@.ms(d interval) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT greatest(0, ceil(extract(epoch FROM d) * 1000))::bigint $$;

-- Why a held request's lease is over at `v_now`, or NULL while it lives:
-- past its maxHold (revoked) or past the later of its own and its group's
-- expiry (expired), whichever came first.
CREATE FUNCTION @schema@.over(r @schema@.requests, v_now timestamptz) RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_expiry timestamptz := r.expires_at;
    v_group timestamptz;
BEGIN
    IF r.ended IS NOT NULL THEN
        RETURN r.ended;
    END IF;
    IF r.group_id IS NOT NULL THEN
        SELECT g.expires_at INTO v_group FROM @schema@.groups g WHERE g.id = r.group_id;
        v_expiry := greatest(v_expiry, v_group);
    END IF;
    IF r.revoke_at IS NOT NULL AND r.revoke_at <= v_now AND r.revoke_at <= v_expiry THEN
        RETURN 'revoked';
    END IF;
    IF v_expiry <= v_now THEN
        RETURN 'expired';
    END IF;
    RETURN NULL;
END $$;

-- When a held request's lease runs out unless renewed.
CREATE FUNCTION @schema@.expiry(r @schema@.requests) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT least(greatest(r.expires_at, (SELECT g.expires_at FROM @schema@.groups g WHERE g.id = r.group_id)),
                 r.revoke_at)
$$;

-- Grants waiting request `p_request` its key, whose row the caller locked
-- and found free: a fence taken now, after that lock (PG-04).
CREATE FUNCTION @schema@.grant_to(p_request bytea, v_now timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    r @schema@.requests;
BEGIN
    UPDATE @schema@.requests SET
        fence = nextval('@schema@.fence'),
        granted_at = v_now,
        expires_at = v_now + ttl,
        revoke_at = v_now + max_hold
    WHERE request = p_request
    RETURNING * INTO r;
    UPDATE @schema@.keys SET holder = p_request WHERE lock = r.lock AND key = r.key;
    IF r.group_id IS NOT NULL THEN
        PERFORM @schema@.join_group(r.group_id, v_now + r.ttl, v_now);
    END IF;
END $$;

-- Adds a lease granted at `v_now` to group `p_group`. A group past its
-- expiry is made anew: the leases it held are over first, so that no
-- lease that ran out lives again (LOCK-05).
CREATE FUNCTION @schema@.join_group(p_group bytea, p_until timestamptz, v_now timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO @schema@.groups VALUES (p_group, p_until) ON CONFLICT (id) DO NOTHING;
    IF FOUND THEN
        RETURN;
    END IF;
    PERFORM 1 FROM @schema@.groups WHERE id = p_group AND expires_at <= v_now FOR UPDATE;
    IF FOUND THEN
        UPDATE @schema@.requests SET ended = 'expired', ended_at = v_now
        WHERE group_id = p_group AND ended IS NULL AND fence IS NOT NULL AND expires_at <= v_now;
        UPDATE @schema@.groups SET expires_at = p_until WHERE id = p_group;
    END IF;
END $$;

-- Gives a key whose row the caller locked to the first live waiter in
-- line, if nobody holds it, and tells that waiter (PG-06). A waiter whose
-- place ran out (its store is gone) leaves the line on the way.
CREATE FUNCTION @schema@.promote(p_lock text, p_key text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_next bytea;
    v_now timestamptz;
BEGIN
    LOOP
        SELECT request INTO v_next FROM @schema@.requests
        WHERE lock = p_lock AND key = p_key AND fence IS NULL AND ended IS NULL
        ORDER BY place LIMIT 1 FOR UPDATE;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        v_now := clock_timestamp();
        UPDATE @schema@.requests SET ended = 'expired', ended_at = v_now
        WHERE request = v_next AND expires_at <= v_now;
        IF NOT FOUND THEN
            PERFORM @schema@.grant_to(v_next, v_now);
            PERFORM pg_notify(@channel@, encode(v_next, 'hex'));
            RETURN;
        END IF;
    END LOOP;
END $$;

-- Ends the holder of a key whose row the caller locked if its lease is
-- over, then promotes the line if the key is free.
CREATE FUNCTION @schema@.settle(p_lock text, p_key text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_holder bytea;
    r @schema@.requests;
    v_now timestamptz := clock_timestamp();
    v_why text;
BEGIN
    SELECT holder INTO v_holder FROM @schema@.keys WHERE lock = p_lock AND key = p_key;
    IF v_holder IS NOT NULL THEN
        SELECT * INTO r FROM @schema@.requests WHERE request = v_holder FOR UPDATE;
        IF FOUND THEN
            v_why := @schema@.over(r, v_now);
        ELSE
            v_why := 'expired';
        END IF;
        IF v_why IS NULL THEN
            RETURN;
        END IF;
        UPDATE @schema@.requests SET ended = v_why, ended_at = coalesce(ended_at, v_now)
        WHERE request = v_holder;
        UPDATE @schema@.keys SET holder = NULL WHERE lock = p_lock AND key = p_key;
    END IF;
    PERFORM @schema@.promote(p_lock, p_key);
END $$;

-- Locks a key's row, making it on first use.
CREATE FUNCTION @schema@.lock_key(p_lock text, p_key text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    LOOP
        INSERT INTO @schema@.keys (lock, key) VALUES (p_lock, p_key) ON CONFLICT DO NOTHING;
        PERFORM 1 FROM @schema@.keys WHERE lock = p_lock AND key = p_key FOR UPDATE;
        IF FOUND THEN
            RETURN;
        END IF;
    END LOOP;
END $$;

-- What a request's row says, under its key's row lock.
CREATE FUNCTION @schema@.answer_of(p_request bytea) RETURNS @schema@.answer
LANGUAGE plpgsql AS $$
DECLARE
    r @schema@.requests;
    h @schema@.requests;
    a @schema@.answer;
    v_now timestamptz := clock_timestamp();
BEGIN
    SELECT * INTO r FROM @schema@.requests WHERE request = p_request;
    IF NOT FOUND THEN
        a.answer := 'unknown';
    ELSIF r.fence IS NOT NULL THEN
        a.answer := coalesce(@schema@.over(r, v_now), 'granted');
        a.fence := r.fence;
        a.revoke_in_ms := @schema@.ms(r.revoke_at - v_now);
        a.expires_in_ms := @schema@.ms(@schema@.expiry(r) - v_now);
    ELSIF r.ended IS NOT NULL THEN
        a.answer := r.ended;
    ELSE
        a.answer := 'queued';
        SELECT count(*) INTO a.ahead FROM @schema@.requests
        WHERE lock = r.lock AND key = r.key AND fence IS NULL AND ended IS NULL AND place < r.place;
        SELECT q.* INTO h FROM @schema@.keys k JOIN @schema@.requests q ON q.request = k.holder
        WHERE k.lock = r.lock AND k.key = r.key;
        a.expires_in_ms := @schema@.ms(@schema@.expiry(h) - v_now);
    END IF;
    RETURN a;
END $$;

-- LOCK-01, LOCK-03, PG-05: asks for a key. A request id seen before
-- answers as before; otherwise the key is granted if nobody holds it or
-- waits for it, else the request waits in line (or, not queued, is told
-- the key is held).
CREATE FUNCTION @schema@.hold(
    p_request bytea, p_lock text, p_key text, p_ttl_ms bigint, p_max_hold_ms bigint,
    p_group bytea, p_queue boolean
) RETURNS @schema@.answer
LANGUAGE plpgsql AS $$
DECLARE
    v_now timestamptz;
    v_holder bytea;
    a @schema@.answer;
BEGIN
    PERFORM @schema@.lock_key(p_lock, p_key);
    PERFORM 1 FROM @schema@.requests WHERE request = p_request;
    IF FOUND THEN
        RETURN @schema@.answer_of(p_request);
    END IF;
    PERFORM @schema@.settle(p_lock, p_key);
    SELECT holder INTO v_holder FROM @schema@.keys WHERE lock = p_lock AND key = p_key;
    v_now := clock_timestamp();
    IF v_holder IS NULL THEN
        INSERT INTO @schema@.requests (request, lock, key, place, ttl, max_hold, group_id, asked_at, expires_at)
        VALUES (p_request, p_lock, p_key, nextval('@schema@.place'), p_ttl_ms * interval '1 ms',
                p_max_hold_ms * interval '1 ms', p_group, v_now, v_now);
        PERFORM @schema@.grant_to(p_request, v_now);
        RETURN @schema@.answer_of(p_request);
    END IF;
    IF NOT p_queue THEN
        a.answer := 'not_held';
        RETURN a;
    END IF;
    INSERT INTO @schema@.requests (request, lock, key, place, ttl, max_hold, group_id, asked_at, expires_at)
    VALUES (p_request, p_lock, p_key, nextval('@schema@.place'), p_ttl_ms * interval '1 ms',
            p_max_hold_ms * interval '1 ms', p_group, v_now, v_now + p_ttl_ms * interval '1 ms');
    RETURN @schema@.answer_of(p_request);
END $$;

-- PG-06: a waiter looks again (told, or at its holder's expiry): its
-- key's holder is ended if over, the line promoted, and its own place,
-- if it still waits, kept for another ttl.
CREATE FUNCTION @schema@.look_again(p_request bytea) RETURNS @schema@.answer
LANGUAGE plpgsql AS $$
DECLARE
    v_lock text;
    v_key text;
BEGIN
    SELECT lock, key INTO v_lock, v_key FROM @schema@.requests WHERE request = p_request;
    IF NOT FOUND THEN
        RETURN @schema@.answer_of(p_request);
    END IF;
    PERFORM @schema@.lock_key(v_lock, v_key);
    PERFORM @schema@.settle(v_lock, v_key);
    UPDATE @schema@.requests SET expires_at = clock_timestamp() + ttl
    WHERE request = p_request AND fence IS NULL AND ended IS NULL AND expires_at > clock_timestamp();
    RETURN @schema@.answer_of(p_request);
END $$;

-- LOCK-05, MANUAL-03: renews a held lease for `p_ttl_ms` from now (its
-- own ttl when NULL). Another ttl takes it out of its group. A lease
-- that is over is not renewed: the answer says why.
CREATE FUNCTION @schema@.renew(p_request bytea, p_ttl_ms bigint) RETURNS @schema@.answer
LANGUAGE plpgsql AS $$
DECLARE
    r @schema@.requests;
    v_now timestamptz := clock_timestamp();
    v_ttl interval;
BEGIN
    SELECT * INTO r FROM @schema@.requests WHERE request = p_request FOR UPDATE;
    IF NOT FOUND OR r.fence IS NULL THEN
        RETURN @schema@.answer_of(p_request);
    END IF;
    IF @schema@.over(r, v_now) IS NULL THEN
        v_ttl := coalesce(p_ttl_ms * interval '1 ms', r.ttl);
        UPDATE @schema@.requests SET
            expires_at = greatest(expires_at, v_now + v_ttl),
            ttl = v_ttl,
            group_id = CASE WHEN v_ttl = r.ttl THEN group_id END
        WHERE request = p_request;
    END IF;
    RETURN @schema@.answer_of(p_request);
END $$;

-- PG-07: renews every lease of a group with one row's update, and
-- answers the time left before the group runs out; a group past its
-- expiry (its leases with it) or unknown is not renewed (NULL).
CREATE FUNCTION @schema@.renew_group(p_group bytea, p_ttl_ms bigint) RETURNS bigint
LANGUAGE sql AS $$
    UPDATE @schema@.groups SET expires_at = greatest(expires_at, clock_timestamp() + p_ttl_ms * interval '1 ms')
    WHERE id = p_group AND expires_at > clock_timestamp()
    RETURNING @schema@.ms(expires_at - clock_timestamp())
$$;

-- LOCK-01: lets a held lease go and grants the next in line. Answers
-- released, or why the lease was already over.
CREATE FUNCTION @schema@.release(p_request bytea) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    r @schema@.requests;
    v_now timestamptz;
    v_why text;
BEGIN
    SELECT * INTO r FROM @schema@.requests WHERE request = p_request;
    IF NOT FOUND THEN
        RETURN 'unknown';
    END IF;
    PERFORM @schema@.lock_key(r.lock, r.key);
    SELECT * INTO r FROM @schema@.requests WHERE request = p_request FOR UPDATE;
    IF r.fence IS NULL THEN
        RETURN coalesce(r.ended, 'queued');
    END IF;
    IF r.ended IS NOT NULL THEN
        RETURN r.ended;
    END IF;
    v_now := clock_timestamp();
    v_why := @schema@.over(r, v_now);
    UPDATE @schema@.requests SET ended = coalesce(v_why, 'released'), ended_at = v_now
    WHERE request = p_request;
    UPDATE @schema@.keys SET holder = NULL WHERE lock = r.lock AND key = r.key AND holder = p_request;
    PERFORM @schema@.promote(r.lock, r.key);
    RETURN coalesce(v_why, 'released');
END $$;

-- LOCK-18: withdraws a request: a waiter leaves the line (gave_up), a
-- holder lets its lease go (released); a request already over answers why.
CREATE FUNCTION @schema@.give_up(p_request bytea) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    r @schema@.requests;
BEGIN
    SELECT * INTO r FROM @schema@.requests WHERE request = p_request;
    IF NOT FOUND THEN
        RETURN 'unknown';
    END IF;
    IF r.fence IS NOT NULL THEN
        RETURN @schema@.release(p_request);
    END IF;
    PERFORM @schema@.lock_key(r.lock, r.key);
    UPDATE @schema@.requests SET ended = 'gave_up', ended_at = clock_timestamp()
    WHERE request = p_request AND fence IS NULL AND ended IS NULL;
    IF FOUND THEN
        RETURN 'gave_up';
    END IF;
    SELECT * INTO r FROM @schema@.requests WHERE request = p_request;
    IF r.fence IS NOT NULL THEN
        RETURN @schema@.release(p_request);
    END IF;
    RETURN r.ended;
END $$;

-- The live holders of lock `p_lock` (of every lock when NULL).
CREATE FUNCTION @schema@.holders(p_lock text)
RETURNS TABLE (lock text, key text, fence bigint, held_ms bigint, expires_in_ms bigint)
LANGUAGE sql STABLE AS $$
    SELECT k.lock, k.key, r.fence, @schema@.ms(clock_timestamp() - r.granted_at),
           @schema@.ms(@schema@.expiry(r) - clock_timestamp())
    FROM @schema@.keys k JOIN @schema@.requests r ON r.request = k.holder
    WHERE (p_lock IS NULL OR k.lock = p_lock) AND @schema@.over(r, clock_timestamp()) IS NULL
    ORDER BY k.lock, k.key
$$;

-- Forgets what no retry can still ask about: requests over for longer than
-- `p_after`, free keys nobody waits for, and groups long expired. The
-- largest fence forgotten goes to the high-water row first (PG-04).
CREATE FUNCTION @schema@.forget(p_after interval) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_before timestamptz := clock_timestamp() - p_after;
BEGIN
    UPDATE @schema@.high_water SET fence = greatest(fence, coalesce(
        (SELECT max(fence) FROM @schema@.requests WHERE ended IS NOT NULL AND ended_at < v_before), 0));
    DELETE FROM @schema@.requests WHERE ended IS NOT NULL AND ended_at < v_before;
    DELETE FROM @schema@.groups WHERE expires_at < v_before;
    DELETE FROM @schema@.keys k WHERE k.holder IS NULL AND NOT EXISTS (
        SELECT 1 FROM @schema@.requests r WHERE r.lock = k.lock AND r.key = k.key AND r.ended IS NULL);
END $$;

-- PG-04: the largest fence this database has handed out, by its tables;
-- the fence sequence must not be behind it.
CREATE FUNCTION @schema@.fence_check() RETURNS TABLE (sequence bigint, given bigint)
LANGUAGE sql STABLE AS $$
    SELECT (SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM @schema@.fence),
           greatest((SELECT fence FROM @schema@.high_water), (SELECT max(fence) FROM @schema@.requests),
                    (SELECT max(fence) FROM @schema@.slots), 0)
$$;
