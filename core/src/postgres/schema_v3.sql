-- Leasehold's schema on PostgreSQL, version 3 (docs/postgres.md): who
-- holds what. Every request records the identity of the store handle
-- that asked (WHO-01), and `holders` answers for one key too, with the
-- holder's identity and how many wait (WHO-02). A store of version 2
-- still running beside one of version 3 goes on working: `hold` and
-- `holders` keep their first arguments, the new ones have defaults, and
-- its requests record no identity.

ALTER TABLE @schema@.requests ADD COLUMN identity text;

DROP FUNCTION @schema@.hold(bytea, text, text, bigint, bigint, bytea, boolean);

-- LOCK-01, LOCK-03, PG-05, WHO-01: asks for a key, for `p_identity`. A request id seen before
-- answers as before; otherwise the key is granted if nobody holds it or
-- waits for it, else the request waits in line (or, not queued, is told
-- the key is held).
CREATE FUNCTION @schema@.hold(
    p_request bytea, p_lock text, p_key text, p_ttl_ms bigint, p_max_hold_ms bigint,
    p_group bytea, p_queue boolean, p_identity text DEFAULT NULL
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
                                       fence, granted_at, expires_at, revoke_at, identity)
        VALUES (p_request, p_lock, p_key, nextval('@schema@.place'), v_ttl, v_max_hold, p_group, v_now,
                nextval('@schema@.fence'), v_now, v_now + v_ttl, v_now + v_max_hold, p_identity)
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
    INSERT INTO @schema@.requests (request, lock, key, place, ttl, max_hold, group_id, asked_at,
                                   expires_at, identity)
    VALUES (p_request, p_lock, p_key, nextval('@schema@.place'), v_ttl, v_max_hold, p_group, v_now,
            v_now + v_ttl, p_identity);
    RETURN @schema@.answer_of(p_request);
END $$;

DROP FUNCTION @schema@.holders(text);

-- WHO-02: the live holders of lock `p_lock` (of every lock when NULL),
-- or of its key `p_key` alone, with their identities and how many live
-- requests wait in each key's line.
CREATE FUNCTION @schema@.holders(p_lock text, p_key text DEFAULT NULL)
RETURNS TABLE (lock text, key text, fence bigint, held_ms bigint, expires_in_ms bigint,
               identity text, waiting bigint)
LANGUAGE sql STABLE AS $$
    SELECT k.lock, k.key, r.fence, @schema@.ms(clock_timestamp() - r.granted_at),
           @schema@.ms(@schema@.expiry(r) - clock_timestamp()), r.identity,
           (SELECT count(*) FROM @schema@.requests w
            WHERE w.lock = k.lock AND w.key = k.key AND w.fence IS NULL AND w.ended IS NULL
              AND w.expires_at > clock_timestamp())
    FROM @schema@.keys k JOIN @schema@.requests r ON r.request = k.holder
    WHERE (p_lock IS NULL OR k.lock = p_lock) AND (p_key IS NULL OR k.key = p_key)
      AND @schema@.over(r, clock_timestamp()) IS NULL
    ORDER BY k.lock, k.key
$$;
