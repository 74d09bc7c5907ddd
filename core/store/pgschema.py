"""The shared store's schema: one entry per version, applied in order by
``core.store.pg.migrate`` (under an advisory lock, recorded in
``leash_meta.schema_version``).

Failure: none here; a database whose version is newer than ``SCHEMA_VERSION``
is refused by ``migrate``, and an older one is upgraded only by ``leash
daemon`` and ``leash doctor --repair``.
"""
from __future__ import annotations

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from typing import Any

    # A psycopg connection, as the shared store's modules take it (psycopg is
    # imported only where one is opened: ``core.store.pg.connect``).
    Connection = Any

# Each entry is one schema version, applied in order; never edit one that has
# been applied somewhere: add the next.
MIGRATIONS = (
    """
    CREATE TABLE leash_meta (key text PRIMARY KEY, value text NOT NULL);
    CREATE TABLE acklog (
        seq        bigint PRIMARY KEY,
        ts         text   NOT NULL,
        event      text   NOT NULL,
        session_id text   NOT NULL,
        source     text   NOT NULL,
        line       text   NOT NULL
    );
    CREATE INDEX acklog_session ON acklog (session_id, seq);
    CREATE INDEX acklog_event ON acklog (event, seq);
    """,
    """
    CREATE TABLE stop_state (
        id       integer PRIMARY KEY CHECK (id = 1),
        state    text    NOT NULL,
        head_seq bigint  NOT NULL
    );
    """,
    # Every log-backed state (stops, locks) in one table, keyed by its store;
    # the sessions registry as one row per session.
    """
    CREATE TABLE log_state (
        store    text   PRIMARY KEY,
        state    jsonb  NOT NULL,
        head_seq bigint NOT NULL
    );
    INSERT INTO log_state (store, state, head_seq) SELECT 'stops', state::jsonb, head_seq FROM stop_state;
    DROP TABLE stop_state;
    CREATE TABLE sessions (
        session_id text        PRIMARY KEY,
        record     jsonb       NOT NULL,
        last_seen  timestamptz NOT NULL
    );
    CREATE INDEX sessions_last_seen ON sessions (last_seen);
    """,
    # The halt store (core.store.pghalts): the seed's halt_events and
    # halt_conditions_config with its enum types and indexes (partial ones
    # included), and leash's own tables as halts.db has them.
    """
    CREATE TYPE halt_type AS ENUM ('code_safety', 'scope', 'environment', 'execution', 'security', 'uncertainty');
    CREATE TYPE severity_level AS ENUM ('low', 'medium', 'high', 'critical');
    CREATE TYPE halt_resolution AS ENUM ('resolved', 'escalated', 'dismissed', 'timeout');
    CREATE TYPE halt_session_state AS ENUM ('active', 'halted', 'paused');
    CREATE TABLE halt_events (
        id               uuid            PRIMARY KEY DEFAULT gen_random_uuid(),
        session_id       text            NOT NULL,
        task_id          text,
        halt_type        halt_type       NOT NULL,
        severity         severity_level  NOT NULL,
        description      text            NOT NULL CHECK (length(description) BETWEEN 1 AND 4000),
        context          jsonb,
        triggered_at     timestamptz     NOT NULL DEFAULT now(),
        acknowledged     boolean         NOT NULL DEFAULT false,
        acknowledged_at  timestamptz,
        acknowledged_by  text,
        resolution       halt_resolution,
        resolution_notes text,
        attempt_count    integer         CHECK (attempt_count >= 0),
        previous_error   text,
        created_at       timestamptz     NOT NULL DEFAULT now(),
        updated_at       timestamptz     NOT NULL DEFAULT now(),
        condition_name   text,
        escalate_at      timestamptz,
        auto_recorded    boolean         NOT NULL DEFAULT false
    );
    CREATE INDEX idx_halt_events_session ON halt_events (session_id);
    CREATE INDEX idx_halt_events_task ON halt_events (task_id);
    CREATE INDEX idx_halt_events_type ON halt_events (halt_type);
    CREATE INDEX idx_halt_events_severity ON halt_events (severity);
    CREATE INDEX idx_halt_events_triggered ON halt_events (triggered_at);
    CREATE INDEX idx_halt_events_acknowledged ON halt_events (acknowledged) WHERE acknowledged = false;
    CREATE INDEX idx_halt_events_session_unack ON halt_events (session_id, acknowledged) WHERE acknowledged = false;
    CREATE INDEX idx_halt_events_session_type ON halt_events (session_id, halt_type);
    CREATE INDEX idx_halt_events_escalate ON halt_events (escalate_at)
        WHERE acknowledged = false AND resolution IS NULL AND escalate_at IS NOT NULL;
    CREATE INDEX idx_halt_events_session_escalated ON halt_events (session_id)
        WHERE resolution IN ('escalated', 'timeout');
    CREATE TABLE halt_events_archive (LIKE halt_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS, PRIMARY KEY (id));
    CREATE INDEX idx_halt_events_archive_session ON halt_events_archive (session_id);
    CREATE TABLE halt_conditions_config (
        id                     uuid           PRIMARY KEY DEFAULT gen_random_uuid(),
        condition_name         text           NOT NULL UNIQUE,
        halt_type              halt_type      NOT NULL,
        enabled                boolean        NOT NULL DEFAULT true,
        severity               severity_level NOT NULL,
        threshold              jsonb,
        auto_escalate          boolean        NOT NULL DEFAULT false,
        escalate_after_minutes integer        CHECK (escalate_after_minutes >= 0),
        created_at             timestamptz    NOT NULL DEFAULT now(),
        updated_at             timestamptz    NOT NULL DEFAULT now()
    );
    CREATE TABLE session_states (
        session_id text               PRIMARY KEY,
        state      halt_session_state NOT NULL,
        updated_at timestamptz        NOT NULL
    );
    CREATE TABLE attempts (
        session_id    text        NOT NULL,
        task_id       text        NOT NULL,
        count         integer     NOT NULL DEFAULT 0 CHECK (count >= 0),
        last_error    text,
        recent_errors jsonb       NOT NULL DEFAULT '[]',
        updated_at    timestamptz NOT NULL,
        PRIMARY KEY (session_id, task_id)
    );
    CREATE TABLE files_read (
        session_id text        NOT NULL,
        path       text        NOT NULL,
        read_at    timestamptz NOT NULL,
        PRIMARY KEY (session_id, path)
    );
    CREATE TABLE tracked_sessions (session_id text PRIMARY KEY, since timestamptz NOT NULL);
    """,
    # Death warrants with their dogs' states and leases (core.store.pgwarrants),
    # each host's kennel heartbeat, restart-loop breakers and the reply ledger
    # (core.store.pgsmall).
    """
    CREATE TABLE warrants (
        id           text             PRIMARY KEY,
        seq          bigint           GENERATED ALWAYS AS IDENTITY,
        target       text             NOT NULL,
        target_id    text,
        host         text             NOT NULL,
        name         text             NOT NULL,
        reason       text             NOT NULL,
        requester    text             NOT NULL,
        filed_at     timestamptz      NOT NULL,
        record       jsonb            NOT NULL,
        state        jsonb,
        status       text             NOT NULL CHECK (status IN ('pending', 'active', 'completed')),
        claimed_by   text,
        lease_until  timestamptz,
        pardon       jsonb,
        outcome      text,
        completed_at timestamptz
    );
    CREATE INDEX warrants_waiting ON warrants (host, filed_at, seq) WHERE status = 'pending';
    CREATE INDEX warrants_working ON warrants (host, filed_at, seq) WHERE status = 'active';
    CREATE INDEX warrants_live_name ON warrants (host, name) WHERE status <> 'completed';
    CREATE INDEX warrants_order ON warrants (filed_at, seq);
    CREATE TABLE kennels (
        host         text        PRIMARY KEY,
        record       jsonb       NOT NULL,
        heartbeat_at timestamptz NOT NULL,
        stopped      boolean     NOT NULL
    );
    CREATE TABLE breakers (
        host  text  NOT NULL,
        name  text  NOT NULL,
        boots jsonb NOT NULL,
        PRIMARY KEY (host, name)
    );
    CREATE TABLE replies (
        id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        channel     text   NOT NULL,
        key         text   NOT NULL,
        direction   text   NOT NULL CHECK (direction IN ('in', 'out')),
        recorded_at double precision NOT NULL
    );
    CREATE INDEX replies_conversation ON replies (channel, key, id DESC);
    """,
    # The ack log is append-only in the database too: an UPDATE, DELETE or
    # TRUNCATE of its rows is refused (only the table's owner can switch this
    # off, and `leash log verify` still finds what that owner changed).
    """
    CREATE FUNCTION leash_acklog_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'the ack log is append-only: % refused', TG_OP;
    END $$;
    CREATE TRIGGER acklog_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON acklog
        FOR EACH STATEMENT EXECUTE FUNCTION leash_acklog_append_only();
    """,
    # A breaker keeps the limits its supervisor passed with its newest boot, so
    # `leash loop status` and the console show the window that supervisor uses.
    """
    ALTER TABLE breakers ADD COLUMN limits jsonb NOT NULL DEFAULT '{}';
    """,
    # The budget store (core.store.pgbudget): budget.db's four tables. Spend is
    # kept in whole nano-dollars (sums are exact); a counter row that exists
    # only to be locked before its first write is not ``written``.
    """
    CREATE TABLE budget_spend (
        hour        double precision NOT NULL,
        session_id  text             NOT NULL,
        model       text             NOT NULL,
        host        text             NOT NULL DEFAULT '',
        entity      text             NOT NULL DEFAULT '',
        cli         text             NOT NULL DEFAULT '',
        usd_nanos   bigint           NOT NULL DEFAULT 0,
        estimated   boolean          NOT NULL DEFAULT false,
        input       bigint           NOT NULL DEFAULT 0,
        output      bigint           NOT NULL DEFAULT 0,
        cache_write bigint           NOT NULL DEFAULT 0,
        cache_read  bigint           NOT NULL DEFAULT 0,
        reasoning   bigint           NOT NULL DEFAULT 0,
        requests    bigint           NOT NULL DEFAULT 0,
        PRIMARY KEY (hour, session_id, model)
    );
    CREATE INDEX budget_spend_session ON budget_spend (session_id);
    CREATE TABLE budget_counters (
        cap         text             NOT NULL,
        bucket      text             NOT NULL,
        period      text             NOT NULL,
        period_end  double precision,
        unit        text,
        used        double precision NOT NULL DEFAULT 0,
        estimated   boolean          NOT NULL DEFAULT false,
        raised_to   double precision,
        warned      jsonb            NOT NULL DEFAULT '[]',
        held_since  double precision,
        held_use    double precision,
        released_at double precision,
        released_by text,
        updated_at  double precision,
        extra       jsonb            NOT NULL DEFAULT '{}',
        written     boolean          NOT NULL DEFAULT true,
        PRIMARY KEY (cap, bucket, period)
    );
    CREATE INDEX budget_counters_held ON budget_counters (cap)
        WHERE held_since IS NOT NULL AND released_at IS NULL;
    CREATE TABLE budget_meters (
        session_id text  NOT NULL,
        source     text  NOT NULL,
        state      jsonb NOT NULL,
        PRIMARY KEY (session_id, source)
    );
    CREATE TABLE budget_windows (
        bucket       text             NOT NULL,
        "window"     text             NOT NULL,
        used_percent double precision,
        resets_at    double precision,
        session_id   text,
        at           double precision,
        PRIMARY KEY (bucket, "window")
    );
    """,
    # The runtime role writes a log-backed state only with its ack-log line:
    # the row's new head is the line just appended (writers hold the chain
    # lock, so it is this write's), and the row
    # changed only where that line says (a stop added, a resume removed, a lock
    # filed or released). A lock's row may also lose locks that have expired,
    # with its head kept; a row rebuilt from the log follows its
    # ``state_rebuilt`` line. Anything else (an UPDATE that lifts a stop with no
    # line, a line about one session with a row that drops another's stop) is
    # refused; the schema's owner (repair, copy, migrate) may write any row.
    # The runtime role, not the table's owner, cannot switch the trigger off.
    """
    CREATE FUNCTION leash_log_state_guard() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        line jsonb;
        old_state jsonb := CASE WHEN TG_OP = 'UPDATE' THEN OLD.state ELSE '{}'::jsonb END;
        event text;
        at text[];
        gone text;
    BEGIN
        IF pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = TG_RELID), 'USAGE') THEN
            RETURN NEW;
        END IF;
        -- An upsert's INSERT over an existing row becomes an UPDATE, judged then.
        IF TG_OP = 'INSERT' AND EXISTS (SELECT 1 FROM log_state s WHERE s.store = NEW.store) THEN
            RETURN NEW;
        END IF;
        -- A row rebuilt from the log says so first, in the log (state_rebuilt).
        IF EXISTS (SELECT 1 FROM acklog a WHERE a.seq = (SELECT max(seq) FROM acklog) AND a.event = 'state_rebuilt'
                   AND a.line::jsonb ->> 'file' = NEW.store) THEN
            RETURN NEW;
        END IF;
        IF TG_OP = 'UPDATE' AND NEW.head_seq = OLD.head_seq THEN
            IF NEW.store = 'hands_off' THEN
                FOR gone IN SELECT k FROM jsonb_object_keys(OLD.state) AS k WHERE NOT NEW.state ? k LOOP
                    IF NOT COALESCE((OLD.state -> gone ->> 'expires_at')::timestamptz < now(), false) THEN
                        RAISE EXCEPTION 'log_state: the lock % is not expired; a release needs its ack-log line', gone;
                    END IF;
                END LOOP;
                IF (SELECT count(*) FROM jsonb_object_keys(NEW.state) AS k WHERE NOT OLD.state ? k
                        OR NEW.state -> k <> OLD.state -> k) > 0 THEN
                    RAISE EXCEPTION 'log_state: a lock changed without its ack-log line';
                END IF;
                RETURN NEW;
            END IF;
            IF NEW.state = OLD.state THEN
                RETURN NEW;
            END IF;
            RAISE EXCEPTION 'log_state: the % state changed without an ack-log line', NEW.store;
        END IF;
        -- Writers hold the chain lock: the newest line is the one this write appended.
        SELECT a.line::jsonb INTO line FROM acklog a WHERE a.seq = NEW.head_seq
            AND a.seq = (SELECT max(seq) FROM acklog);
        IF line IS NULL OR (TG_OP = 'UPDATE' AND NEW.head_seq <= OLD.head_seq) THEN
            RAISE EXCEPTION 'log_state: the % state names line %, which is not the line just appended',
                NEW.store, NEW.head_seq;
        END IF;
        event := line ->> 'event';
        IF NEW.store = 'stops' THEN
            at := CASE WHEN event IN ('fleet_stop', 'fleet_resume') THEN ARRAY['fleet']
                       ELSE ARRAY['sessions', line ->> 'session_id'] END;
            IF (NEW.state #- at) <> (old_state #- at) AND old_state <> '{}'::jsonb THEN
                RAISE EXCEPTION 'log_state: the stops changed beyond line % (%)', NEW.head_seq, event;
            END IF;
            IF (event = 'stop_ack' AND NEW.state #> at IS NULL)
                    OR (event = 'resume' AND NEW.state #> at IS NOT NULL)
                    OR (event = 'fleet_stop' AND jsonb_typeof(NEW.state -> 'fleet') IS DISTINCT FROM 'object')
                    OR (event = 'fleet_resume' AND jsonb_typeof(NEW.state -> 'fleet') = 'object') THEN
                RAISE EXCEPTION 'log_state: the stops do not do what line % (%) says', NEW.head_seq, event;
            END IF;
        ELSIF NEW.store = 'hands_off' THEN
            at := ARRAY[line ->> 'entity'];
            FOR gone IN SELECT k FROM jsonb_object_keys(old_state) AS k
                    WHERE NOT NEW.state ? k AND k <> (line ->> 'entity') LOOP
                IF NOT COALESCE((old_state -> gone ->> 'expires_at')::timestamptz < now(), false) THEN
                    RAISE EXCEPTION 'log_state: the lock % is not expired; a release needs its ack-log line', gone;
                END IF;
            END LOOP;
            IF (SELECT count(*) FROM jsonb_object_keys(NEW.state) AS k WHERE k <> (line ->> 'entity')
                    AND (NOT old_state ? k OR NEW.state -> k <> old_state -> k)) > 0
                    OR (event = 'hands_off' AND NOT NEW.state ? (line ->> 'entity'))
                    OR (event = 'release' AND NEW.state ? (line ->> 'entity')) THEN
                RAISE EXCEPTION 'log_state: the locks do not do what line % (%) says', NEW.head_seq, event;
            END IF;
        END IF;
        RETURN NEW;
    END $$;
    CREATE TRIGGER log_state_guard BEFORE INSERT OR UPDATE ON log_state
        FOR EACH ROW EXECUTE FUNCTION leash_log_state_guard();
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)
