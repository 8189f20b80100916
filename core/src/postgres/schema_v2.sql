-- Leasehold's schema on PostgreSQL, version 2 (docs/postgres.md): the
-- same tables, leaner calls. Measured with `make bench-compare` and
-- PostgreSQL's own function timings (track_functions), version 1's hold
-- and release spent most of their time re-reading what they had just
-- written and taking row locks they did not need. Version 2:
--   - locks a key's row with one statement once the row exists;
--   - grants a free key with one INSERT that carries the fence (not an
--     INSERT then an UPDATE) and answers from what it wrote;
--   - reads the holder's row without a row lock: a lease's end is
--     monotonic (once over at some time, it is over at every later time,
--     and neither renewal extends a lease that is over), and the key's
--     row lock already orders every change to the key's line;
--   - answers with one read of the request (and of its group's row, or
--     for a waiter of its line), without calling a function per field;
--   - promotes a waiter without a row lock of its own (the key's row lock
--     orders every change to the line) and without a statement for a
--     waiter that is still alive;
--   - looks again without the key's lock when the request is granted or
--     over already (a pushed grant's look is one read, no write).
--   - a grant into a live renewal group moves the group's expiry to at
--     least the grant's (version 1 moved it only for a group it made
--     anew): the core counts a grant into a group as the group's renewal,
--     as the other stores do, so a group whose leases keep being granted
--     and so is renewed less often must not run out in the database
--     before its holders' deadlines.
-- Every call that writes still waits for its WAL flush. (A release that
-- granted nobody could commit without waiting; but lost in a crash, its
-- lease would come back in its store's renewal group and be renewed with
-- the group for as long as that store runs: the key held for good.)

-- Locks a key's row, making it on first use.
CREATE OR REPLACE FUNCTION @schema@.lock_key(p_lock text, p_key text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    LOOP
        PERFORM 1 FROM @schema@.keys WHERE lock = p_lock AND key = p_key FOR UPDATE;
        IF FOUND THEN
            RETURN;
        END IF;
        INSERT INTO @schema@.keys (lock, key) VALUES (p_lock, p_key) ON CONFLICT DO NOTHING;
    END LOOP;
END $$;

-- Ends the holder of a key whose row the caller locked if its lease is
-- over, then promotes the line if the key is free.
CREATE OR REPLACE FUNCTION @schema@.settle(p_lock text, p_key text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_holder bytea;
    r @schema@.requests;
    v_why text;
BEGIN
    SELECT holder INTO v_holder FROM @schema@.keys WHERE lock = p_lock AND key = p_key;
    IF v_holder IS NOT NULL THEN
        SELECT * INTO r FROM @schema@.requests WHERE request = v_holder;
        IF FOUND THEN
            v_why := @schema@.over(r, clock_timestamp());
        ELSE
            v_why := 'expired';
        END IF;
        IF v_why IS NULL THEN
            RETURN;
        END IF;
        UPDATE @schema@.requests SET ended = v_why, ended_at = coalesce(ended_at, clock_timestamp())
        WHERE request = v_holder;
        UPDATE @schema@.keys SET holder = NULL WHERE lock = p_lock AND key = p_key;
    END IF;
    PERFORM @schema@.promote(p_lock, p_key);
END $$;

-- LOCK-01, LOCK-03, PG-05: asks for a key. A request id seen before
-- answers as before; otherwise the key is granted if nobody holds it or
-- waits for it, else the request waits in line (or, not queued, is told
-- the key is held).
CREATE OR REPLACE FUNCTION @schema@.hold(
    p_request bytea, p_lock text, p_key text, p_ttl_ms bigint, p_max_hold_ms bigint,
    p_group bytea, p_queue boolean
) RETURNS @schema@.answer
LANGUAGE plpgsql AS $$
DECLARE
    v_now timestamptz;
    v_holder bytea;
    v_ttl interval := p_ttl_ms * interval '1 ms';
    v_max_hold interval := p_max_hold_ms * interval '1 ms';
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
        INSERT INTO @schema@.requests (request, lock, key, place, ttl, max_hold, group_id, asked_at,
                                       fence, granted_at, expires_at, revoke_at)
        VALUES (p_request, p_lock, p_key, nextval('@schema@.place'), v_ttl, v_max_hold, p_group, v_now,
                nextval('@schema@.fence'), v_now, v_now + v_ttl, v_now + v_max_hold)
        RETURNING fence INTO a.fence;
        UPDATE @schema@.keys SET holder = p_request WHERE lock = p_lock AND key = p_key;
        a.answer := 'granted';
        a.revoke_in_ms := p_max_hold_ms;
        a.expires_in_ms := p_ttl_ms;
        IF p_group IS NOT NULL THEN
            PERFORM @schema@.join_group(p_group, v_now + v_ttl, v_now);
            SELECT greatest(a.expires_in_ms, @schema@.ms(expires_at - v_now)) INTO a.expires_in_ms
            FROM @schema@.groups WHERE id = p_group;
        END IF;
        a.expires_in_ms := least(a.expires_in_ms, p_max_hold_ms);
        RETURN a;
    END IF;
    IF NOT p_queue THEN
        a.answer := 'not_held';
        RETURN a;
    END IF;
    INSERT INTO @schema@.requests (request, lock, key, place, ttl, max_hold, group_id, asked_at, expires_at)
    VALUES (p_request, p_lock, p_key, nextval('@schema@.place'), v_ttl, v_max_hold, p_group, v_now,
            v_now + v_ttl);
    RETURN @schema@.answer_of(p_request);
END $$;

-- PG-06: a waiter looks again (told, or at its holder's expiry). A request
-- granted or over meanwhile reads its answer; one still waiting has its
-- key's holder ended if over, the line promoted, and its own place, if it
-- still waits, kept for another ttl.
CREATE OR REPLACE FUNCTION @schema@.look_again(p_request bytea) RETURNS @schema@.answer
LANGUAGE plpgsql AS $$
DECLARE
    r @schema@.requests;
BEGIN
    SELECT * INTO r FROM @schema@.requests WHERE request = p_request;
    IF NOT FOUND OR r.fence IS NOT NULL OR r.ended IS NOT NULL THEN
        RETURN @schema@.answer_of(p_request);
    END IF;
    PERFORM @schema@.lock_key(r.lock, r.key);
    PERFORM @schema@.settle(r.lock, r.key);
    UPDATE @schema@.requests SET expires_at = clock_timestamp() + ttl
    WHERE request = p_request AND fence IS NULL AND ended IS NULL AND expires_at > clock_timestamp();
    RETURN @schema@.answer_of(p_request);
END $$;

-- LOCK-01: lets a held lease go and grants the next in line. Answers
-- released, or why the lease was already over.
CREATE OR REPLACE FUNCTION @schema@.release(p_request bytea) RETURNS text
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
    -- Read again under the key's lock: a waiter may have been promoted meanwhile.
    SELECT * INTO r FROM @schema@.requests WHERE request = p_request;
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

-- What a request's row says, under its key's row lock.
CREATE OR REPLACE FUNCTION @schema@.answer_of(p_request bytea) RETURNS @schema@.answer
LANGUAGE plpgsql AS $$
DECLARE
    r @schema@.requests;
    a @schema@.answer;
    v_now timestamptz := clock_timestamp();
    v_group timestamptz;
    v_expiry timestamptz;
BEGIN
    SELECT * INTO r FROM @schema@.requests WHERE request = p_request;
    IF NOT FOUND THEN
        a.answer := 'unknown';
    ELSIF r.fence IS NOT NULL THEN
        IF r.group_id IS NOT NULL THEN
            SELECT expires_at INTO v_group FROM @schema@.groups WHERE id = r.group_id;
        END IF;
        v_expiry := greatest(r.expires_at, v_group);
        a.answer := CASE
            WHEN r.ended IS NOT NULL THEN r.ended
            WHEN r.revoke_at <= v_now AND r.revoke_at <= v_expiry THEN 'revoked'
            WHEN v_expiry <= v_now THEN 'expired'
            ELSE 'granted' END;
        a.fence := r.fence;
        a.revoke_in_ms := @schema@.ms(r.revoke_at - v_now);
        a.expires_in_ms := @schema@.ms(least(v_expiry, r.revoke_at) - v_now);
    ELSIF r.ended IS NOT NULL THEN
        a.answer := r.ended;
    ELSE
        a.answer := 'queued';
        SELECT count(*) INTO a.ahead FROM @schema@.requests
        WHERE lock = r.lock AND key = r.key AND fence IS NULL AND ended IS NULL AND place < r.place;
        SELECT least(greatest(q.expires_at, g.expires_at), q.revoke_at) INTO v_expiry
        FROM @schema@.keys k JOIN @schema@.requests q ON q.request = k.holder
        LEFT JOIN @schema@.groups g ON g.id = q.group_id
        WHERE k.lock = r.lock AND k.key = r.key;
        a.expires_in_ms := @schema@.ms(v_expiry - v_now);
    END IF;
    RETURN a;
END $$;

-- Gives a key whose row the caller locked to the first live waiter in
-- line, if nobody holds it, and tells that waiter (PG-06). A waiter whose
-- place ran out (its store is gone) leaves the line on the way.
CREATE OR REPLACE FUNCTION @schema@.promote(p_lock text, p_key text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_next bytea;
    v_expires timestamptz;
    v_now timestamptz;
BEGIN
    LOOP
        SELECT request, expires_at INTO v_next, v_expires FROM @schema@.requests
        WHERE lock = p_lock AND key = p_key AND fence IS NULL AND ended IS NULL
        ORDER BY place LIMIT 1;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        v_now := clock_timestamp();
        IF v_expires > v_now THEN
            PERFORM @schema@.grant_to(v_next, v_now);
            PERFORM pg_notify(@channel@, encode(v_next, 'hex'));
            RETURN;
        END IF;
        UPDATE @schema@.requests SET ended = 'expired', ended_at = v_now WHERE request = v_next;
    END LOOP;
END $$;

-- Adds a lease granted at `v_now` to group `p_group`, whose expiry moves to
-- at least `p_until`. A group past its expiry is made anew: the leases it
-- held are over first, so that no lease that ran out lives again (LOCK-05).
CREATE OR REPLACE FUNCTION @schema@.join_group(p_group bytea, p_until timestamptz, v_now timestamptz) RETURNS void
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
    END IF;
    UPDATE @schema@.groups SET expires_at = p_until WHERE id = p_group AND expires_at < p_until;
END $$;
