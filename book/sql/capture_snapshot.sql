/*
================================================================================
capture_snapshot.sql: a DMV snapshot for `python -m models fit snapshot.csv`
================================================================================

WHAT IT DOES
    Reads the server's latch, wait and spinlock counters (and a few others)
    twice, @interval_s seconds apart, and prints what changed between the two
    reads as one CSV: one result set with one column, csv, one line a row.
    The format is the one models/counters/snapshot.py defines: the header line, the
    settings of the capture, then one row per DMV row that moved:

        setting    interval_s, schedulers, maxdop, sessions, database_sessions, database_cpu_ms,
                   request_dop, max_server_memory_mb, version, database, database_id, sql_memory_model,
                   runnable_tasks, tempdb_data_files, tempdb_metadata_memory_optimized, page_samples
        latch      sys.dm_os_latch_stats
        wait       sys.dm_os_wait_stats
        spinlock   sys.dm_os_spinlock_stats
        xevent     latch_acquired events of one latch class (only with @xevents = 1)
        scheduler  sys.dm_os_schedulers, every visible online scheduler
        counter    Batch Requests/sec, Transactions/sec (of @database), Version Generation rate (KB/s),
                   Total Rowgroups Compressed, Delta Rowgroups Created (SQLServer:Columnstore),
                   Temp Tables Creation Rate, Temp Tables For Destruction, Active Temp Tables
                   (SQLServer:General Statistics), Version Store Size (KB), Version Cleanup
                   rate (KB/s) (SQLServer:Transactions); the point-in-time ones (Temp Tables For
                   Destruction, Active Temp Tables, Version Store Size (KB)) as the second read
                   found them, the others their increase
        semaphore  sys.dm_exec_query_resource_semaphores: forced_grant_count, timeout_error_count
        index      sys.dm_db_index_operational_stats of @database, as schema.table.index:
                   page_latch_wait_count and _in_ms; index_tree: tree_page_latch_wait_count and
                   _in_ms (the non-leaf pages' part); index_insert: leaf_insert_count;
                   index_update: leaf_update_count; index_allocation: leaf_allocation_count
                   (page splits and new end pages)
        file_write sys.dm_io_virtual_file_stats, per database file as db_id:file_id:ROWS or
                   db_id:file_id:LOG (the type from sys.master_files): num_of_writes and
                   io_stall_write_ms; file_read: num_of_reads and io_stall_read_ms
        page       sys.dm_os_waiting_tasks: page latch waiters seen once a second from the first
                   read to the second (page_samples samples in all), by page
        file_size  tempdb.sys.database_files: each tempdb data file's size in MB at the second
                   read, as 2:file_id:ROWS (the current size; sys.master_files holds the size
                   tempdb is created at on a restart)

    runnable_tasks is the mean, over those same page_samples samples, of
    runnable_tasks_count summed over the visible online schedulers
    (sys.dm_os_schedulers): the workers waiting for a CPU.  tempdb_data_files
    is the count of tempdb's data files (sys.master_files, database 2, ROWS),
    read once before the first read.  tempdb_metadata_memory_optimized is
    SERVERPROPERTY('IsTempdbMetadataMemoryOptimized'), 1 or 0, left out
    before SQL Server 2019 (where it is NULL).  database_sessions counts the sessions
    among `sessions` whose current database is @database, and
    database_cpu_ms is the CPU those sessions used between the reads
    (sys.dm_exec_sessions cpu_time): the workload apart from the rest of the
    instance, which the fit charges its counts to.

    Counts and times are differences over the interval (second read minus
    first).  max_time_ms is NOT the interval's: it is the DMV's own maximum
    since start-up (or the last clear) as the second read found it, an upper
    bound on any one wait of the interval, and the fit uses it only as such.
    Every wait type that moved is kept, the benign ones (idle waits,
    SOS_SCHEDULER_YIELD, ...) included: the fit filters them itself.

    The wait, latch, spinlock, scheduler and file rows, Batch Requests/sec,
    the sessions and runnable_tasks are the whole instance's; Transactions/sec,
    database_sessions, database_cpu_ms and the index rows are @database's.  The fit says so where it charges the
    former to one workload.

WHAT IT NEEDS
    SQL Server 2016 or later.  It only reads DMVs: VIEW SERVER STATE.
    sys.master_files, which names the files' types, shows a file only to a
    login with VIEW ANY DEFINITION, CREATE DATABASE or ALTER ANY DATABASE;
    without them the script takes tempdb's and @database's file types from
    their own sys.database_files, leaves the other databases' file rows out
    and says so in a # comment line.  The fit knows @@VERSION from SQL
    Server 2016 to 2025 (13.x to 17.x); on 2025 the columnstore grant
    behaviour at the time-out is reported as undetermined.
    With @xevents = 1 it also creates, starts and drops an extended-events
    session filtered to one latch class: ALTER ANY EVENT SESSION.  It
    changes nothing else.

HOW TO RUN IT
    Set the parameters below (or, for @database, connect to that database:
    the script refuses to read a system database's indexes, master, tempdb,
    model or msdb, unless @allow_system_database = 1, because under sqlcmd
    without -d it runs in the login's default database, often master), run
    the whole script at once (it is a single batch, with no
    batch separators) and save the result as snapshot.csv:

    - SSMS: results to grid (Ctrl+D), run, click the csv column's header to
      select the whole column, copy (Ctrl+C), paste into an empty file and
      save it as snapshot.csv.
    - sqlcmd:
          sqlcmd -S SERVER -E -i capture_snapshot.sql -h -1 -W -o snapshot.csv
      (-h -1: no column header, -W: no trailing blanks; the script sets
      NOCOUNT ON, so no "rows affected" lines).  Add -d DATABASE to read that
      database's indexes (sqlcmd starts in the login's default database), and
      -f o:65001 to write the file as UTF-8 when a table or index name has
      non-ASCII letters.

    Then:
          python -m models fit snapshot.csv

    A restart, or a DBCC SQLPERF(..., CLEAR) of the wait, latch or spinlock
    statistics, between the two reads makes counts go down: the script prints
    those negative differences as they are and the fit refuses the file and
    says why.  Take the snapshot again.

    If you cancel the script while it waits with @xevents = 1, its event
    session stays behind, running; drop it:
          DROP EVENT SESSION [capture_snapshot_latch_acquired] ON SERVER;
    (the next run of this script also drops it).
================================================================================
*/

SET NOCOUNT ON;               -- no "(n rows affected)" lines in the output
SET QUOTED_IDENTIFIER ON;     -- the XML methods that read the event session need these
SET ANSI_NULLS ON;            -- (sqlcmd's default for QUOTED_IDENTIFIER is OFF)
SET ANSI_PADDING ON;
SET ANSI_WARNINGS ON;
SET ARITHABORT ON;
SET CONCAT_NULL_YIELDS_NULL ON;
SET NUMERIC_ROUNDABORT OFF;

-------------------------------------------------------------------------------
-- Parameters
-------------------------------------------------------------------------------
DECLARE @interval_s int     = 60;         -- seconds between the two snapshots (1 to 86399)
DECLARE @xevents    bit     = 0;          -- 1: also count sqlserver.latch_acquired events of one latch
                                          --    class over the interval (extended events, histogram target).
                                          --    latch_acquired fires on every latch acquire, millions of
                                          --    times a second on a busy server: the session keeps only
                                          --    @xevent_class's (a predicate), and still, use it only for a
                                          --    short interval on a test or quiet server.
DECLARE @xevent_class nvarchar(60) = NULL; -- the latch class whose acquires are counted, as
                                          --    sys.dm_os_latch_stats names it (NULL: the class other than
                                          --    BUFFER with the most wait time since start-up)
DECLARE @database   sysname = DB_NAME();  -- the database whose indexes (sys.dm_db_index_operational_stats)
                                          -- and Transactions/sec counter are read
DECLARE @allow_system_database bit = 0;   -- 1: read @database's indexes even if it is master, tempdb,
                                          --    model or msdb (0: refuse, as the waits are a user database's)

-------------------------------------------------------------------------------
-- Checks and working variables
-------------------------------------------------------------------------------
DECLARE @database_id int = DB_ID(@database);

IF @interval_s IS NULL OR @interval_s < 1 OR @interval_s > 86399
BEGIN
    RAISERROR(N'@interval_s = %d: use 1 to 86399 seconds (less than a day).',
              16, 1, @interval_s);
    RETURN;
END;

IF @database_id IS NULL
BEGIN
    RAISERROR(N'@database = %s: no such database on this server.', 16, 1, @database);
    RETURN;
END;

-- The index rows and Transactions/sec must be the user database's whose work waits.  Under sqlcmd without -d
-- (or SSMS connected to the default database) DB_NAME() is the login's default database, often master.
IF @database_id IN (1, 2, 3, 4) AND ISNULL(@allow_system_database, 0) = 0
BEGIN
    RAISERROR(N'@database = %s is a system database (master, tempdb, model or msdb): the script ran in it, not in the user database whose work waits. Run it there (sqlcmd -d DATABASE, or USE DATABASE first), or set @database; set @allow_system_database = 1 to read this one anyway.',
              16, 1, @database);
    RETURN;
END;

-- Between the two reads the script waits one second at a time and samples the page latch waiters as the
-- first read ends and after each second (a PFS storm between the reads then still shows): @interval_s + 1
-- samples, printed as the setting page_samples.  The interval printed is the one measured.
DECLARE @page_samples int = 0;              -- samples of sys.dm_os_waiting_tasks taken into #pages
DECLARE @runnable     bigint = 0;           -- runnable_tasks_count over the visible online schedulers, added
                                            -- up over the same samples (their mean is the setting runnable_tasks)
DECLARE @second       int = 0;              -- the seconds of the interval waited so far

DECLARE @xe_session sysname = N'capture_snapshot_latch_acquired';  -- the event session's name (fixed)
DECLARE @snap       tinyint = 1;            -- which snapshot the loop below is taking (1, then 2)
DECLARE @t1         datetime2(7);           -- when the first snapshot was taken
DECLARE @t2         datetime2(7);           -- when the second snapshot was taken
DECLARE @sessions   int = 0;                -- user sessions that ran a request during the interval
DECLARE @database_sessions int = 0;         -- ... of them, those whose current database is @database
DECLARE @database_cpu_ms bigint = 0;        -- the CPU those sessions used between the two reads (ms)
DECLARE @dop        int = 0;                -- the largest dop of the user requests seen at either read
DECLARE @seen       int;                    -- one read's largest dop
DECLARE @target     xml;                    -- the histogram target's data
DECLARE @dropped    bigint = 0;             -- events the event session lost (its buffers were full)
DECLARE @sql        nvarchar(max);          -- dynamic SQL (the index names, in @database)
DECLARE @names_note nvarchar(4000);         -- why index names could not be read, if they could not
DECLARE @class_key  int;                    -- the latch_class map key of @xevent_class (the predicate)
DECLARE @memory_model nvarchar(60);         -- sys.dm_os_sys_info sql_memory_model_desc (2016 SP1 and later)
DECLARE @files_hidden int = 0;              -- database files whose type could not be read (no file rows)

-------------------------------------------------------------------------------
-- Working tables
-------------------------------------------------------------------------------
DROP TABLE IF EXISTS #snap, #delta, #xevent, #pages, #files, #cpu, #out;

-- Both snapshots, one row per DMV row: the DMV's columns under the CSV's
-- column names (NULL where the source has no such column).
CREATE TABLE #cpu (                         -- @database's user sessions' CPU at the first read
    session_id     smallint      NOT NULL,
    login_time     datetime      NOT NULL,
    cpu_time       int           NOT NULL
);
CREATE TABLE #snap (
    snap           tinyint       NOT NULL,  -- 1: first snapshot, 2: second
    source         varchar(16)   NOT NULL,  -- latch, wait, spinlock, scheduler, counter, semaphore, index...
    name           nvarchar(256) NOT NULL,  -- for index rows object_<id>.index_<id> (named at the end)
    object_id      int           NULL,      -- index rows only
    index_id       int           NULL,      -- index rows only
    count          bigint        NULL,
    time_ms        bigint        NULL,
    max_time_ms    bigint        NULL,
    signal_time_ms bigint        NULL,
    spins          bigint        NULL,
    backoffs       bigint        NULL,
    INDEX cx_snap CLUSTERED (snap, source, name)
);

-- The differences (second minus first), one row per row of the second snapshot.
CREATE TABLE #delta (
    source         varchar(16)   NOT NULL,
    name           nvarchar(450) NOT NULL,  -- schema.table.index: up to 3 x 128 characters, 2 dots (and ids)
    object_id      int           NULL,
    index_id       int           NULL,
    count          bigint        NULL,
    time_ms        bigint        NULL,
    max_time_ms    bigint        NULL,
    signal_time_ms bigint        NULL,
    spins          bigint        NULL,
    backoffs       bigint        NULL
);

-- Tasks seen waiting on a page latch once a second from the first read to the second, by page
-- (db_id:file_id:page_id): samples, not a difference, that say whether the waits are on one page.
CREATE TABLE #pages (
    name  nvarchar(256) NOT NULL,
    count bigint        NOT NULL
);

-- Every database file's type (ROWS, LOG, ...), read once: the file rows' names end with it.
CREATE TABLE #files (
    database_id int          NOT NULL,
    file_id     int          NOT NULL,
    type_desc   nvarchar(60) NOT NULL,
    PRIMARY KEY (database_id, file_id)
);

-- latch_acquired events counted by latch class (@xevents = 1).
CREATE TABLE #xevent (
    name  nvarchar(256) NOT NULL,
    count bigint        NOT NULL
);

-- The output, in order: grp (0 header, 1 settings, 2 latch, 3 wait, 4 spinlock,
-- 5 xevent, 6 scheduler, 7 counter, 8 index, 9 index_tree, 10 index_insert,
-- 11 index_update, 12 index_allocation, 13 semaphore, 14 file_write, 15 file_read,
-- 16 page, 17 file_size), then k within the group.  A row with raw set is printed as it is
-- (the header line, a # comment line).
CREATE TABLE #out (
    grp            tinyint        NOT NULL,
    k              int            NOT NULL,
    raw            nvarchar(4000) NULL,
    source         varchar(16)    NULL,
    name           nvarchar(450)  NULL,
    count          bigint         NULL,
    time_ms        bigint         NULL,
    max_time_ms    bigint         NULL,
    signal_time_ms bigint         NULL,
    spins          bigint         NULL,
    backoffs       bigint         NULL,
    value          nvarchar(400)  NULL
);

BEGIN TRY

    ---------------------------------------------------------------------------
    -- The extended-events session (created now, started after the first
    -- snapshot).  A session of this name left by a cancelled run is dropped
    -- first.  A predicate keeps only @xevent_class's events (latch_acquired
    -- fires on every acquire of every class: unfiltered, the session is heavy
    -- and, with ALLOW_SINGLE_EVENT_LOSS, loses events); the histogram target
    -- counts them per value of the event field (source_type = 0) class; the
    -- session runs only between the snapshots.
    ---------------------------------------------------------------------------
    IF EXISTS (SELECT 1 FROM sys.server_event_sessions WHERE name = @xe_session)
    BEGIN
        IF EXISTS (SELECT 1 FROM sys.dm_xe_sessions WHERE name = @xe_session)
            EXEC (N'ALTER EVENT SESSION [capture_snapshot_latch_acquired] ON SERVER STATE = STOP;');
        EXEC (N'DROP EVENT SESSION [capture_snapshot_latch_acquired] ON SERVER;');
    END;

    IF @xevents = 1
    BEGIN
        -- The class to count: the one asked for, else the non-buffer class that has waited longest.  The
        -- event's class field is a map (latch_class): the predicate compares its key, and the map calls the
        -- buffer latch BUF where sys.dm_os_latch_stats says BUFFER.
        IF @xevent_class IS NULL
            SELECT TOP (1) @xevent_class = l.latch_class
            FROM sys.dm_os_latch_stats AS l
            WHERE l.latch_class <> N'BUFFER'
            ORDER BY l.wait_time_ms DESC;
        SELECT TOP (1) @class_key = m.map_key
        FROM sys.dm_xe_map_values AS m
        WHERE m.name = N'latch_class'
          AND m.map_value = CASE WHEN @xevent_class = N'BUFFER' THEN N'BUF' ELSE @xevent_class END;
        IF @class_key IS NULL
        BEGIN
            RAISERROR(N'@xevent_class = %s: no such latch class in sys.dm_xe_map_values (latch_class); use a latch_class of sys.dm_os_latch_stats.',
                      16, 1, @xevent_class);
            RETURN;
        END;
        SET @sql = N'
CREATE EVENT SESSION [capture_snapshot_latch_acquired] ON SERVER
ADD EVENT sqlserver.latch_acquired
    (WHERE ([class] = (' + CONVERT(nvarchar(11), @class_key) + N')))
ADD TARGET package0.histogram
    (SET filtering_event_name = N''sqlserver.latch_acquired'',
         source               = N''class'',
         source_type          = 0,
         slots                = 1024)
WITH (MAX_MEMORY            = 4096 KB,
      EVENT_RETENTION_MODE  = ALLOW_SINGLE_EVENT_LOSS,
      MAX_DISPATCH_LATENCY  = 1 SECONDS,
      TRACK_CAUSALITY       = OFF,
      STARTUP_STATE         = OFF);';
        EXEC (@sql);
    END;

    -- The memory model (CONVENTIONAL, LOCK_PAGES, LARGE_PAGES): sys.dm_os_sys_info has it from SQL Server
    -- 2016 SP1; read through dynamic SQL so that an older build leaves the setting out instead of failing.
    BEGIN TRY
        EXEC sys.sp_executesql N'SELECT @m = sql_memory_model_desc FROM sys.dm_os_sys_info;',
                               N'@m nvarchar(60) OUTPUT', @m = @memory_model OUTPUT;
    END TRY
    BEGIN CATCH
        SET @memory_model = NULL;
    END CATCH;

    -- The database files' types, for the file rows' names and tempdb_data_files.  sys.master_files shows a
    -- file only to a login with VIEW ANY DEFINITION, CREATE DATABASE or ALTER ANY DATABASE: what it hides of
    -- tempdb's and @database's files is read from their own sys.database_files (every login sees tempdb's; a
    -- user of @database sees its), and the files whose type is still unknown are counted for a # comment.
    INSERT INTO #files (database_id, file_id, type_desc)
    SELECT mf.database_id, mf.file_id, mf.type_desc
    FROM sys.master_files AS mf;

    BEGIN TRY
        INSERT INTO #files (database_id, file_id, type_desc)
        SELECT 2, df.file_id, df.type_desc
        FROM tempdb.sys.database_files AS df
        WHERE NOT EXISTS (SELECT 1 FROM #files AS f WHERE f.database_id = 2 AND f.file_id = df.file_id);
    END TRY
    BEGIN CATCH
        -- No access to tempdb's catalog: its files count among the hidden ones below.
    END CATCH;

    SET @sql = N'
INSERT INTO #files (database_id, file_id, type_desc)
SELECT @database_id, df.file_id, df.type_desc
FROM ' + QUOTENAME(@database) + N'.sys.database_files AS df
WHERE NOT EXISTS (SELECT 1 FROM #files AS f WHERE f.database_id = @database_id AND f.file_id = df.file_id);';
    BEGIN TRY
        EXEC sys.sp_executesql @sql, N'@database_id int', @database_id = @database_id;
    END TRY
    BEGIN CATCH
        -- No access to @database: its files count among the hidden ones below.
    END CATCH;

    -- Only the databases of sys.databases count: the resource database (32767) has files in
    -- sys.dm_io_virtual_file_stats but no row there, nor in sys.master_files.
    SELECT @files_hidden = COUNT(*)
    FROM sys.dm_io_virtual_file_stats(NULL, NULL) AS vfs
    WHERE EXISTS (SELECT 1 FROM sys.databases AS db WHERE db.database_id = vfs.database_id)
      AND NOT EXISTS (SELECT 1 FROM #files AS f WHERE f.database_id = vfs.database_id AND f.file_id = vfs.file_id);

    ---------------------------------------------------------------------------
    -- The two snapshots: the same queries, run twice, with the wait (and the
    -- event session) between them.
    ---------------------------------------------------------------------------
    WHILE @snap <= 2
    BEGIN
        IF @snap = 2
        BEGIN
            IF @xevents = 1
                EXEC (N'ALTER EVENT SESSION [capture_snapshot_latch_acquired] ON SERVER STATE = START;');

            WHILE @second <= @interval_s
            BEGIN
                IF @second > 0
                    WAITFOR DELAY '00:00:01';
                -- The page latch waiters right now, by page.
                INSERT INTO #pages (name, count)
                SELECT LEFT(wt.resource_description, 256), COUNT(*)
                FROM sys.dm_os_waiting_tasks AS wt
                WHERE wt.wait_type LIKE N'PAGELATCH[_]%'
                  AND wt.resource_description IS NOT NULL
                GROUP BY wt.resource_description;
                -- The workers waiting for a CPU right now, on the schedulers that run user work.
                SELECT @runnable += ISNULL(SUM(CONVERT(bigint, s.runnable_tasks_count)), 0)
                FROM sys.dm_os_schedulers AS s
                WHERE s.status = N'VISIBLE ONLINE';
                SET @page_samples += 1;
                SET @second += 1;
            END;

            IF @xevents = 1
            BEGIN
                -- Read the histogram while the session runs (stopping it frees
                -- the target's memory), then stop and drop the session.  The
                -- histogram is an asynchronous target: events still in the
                -- session's buffers (at most MAX_DISPATCH_LATENCY, 1 s, of
                -- them) are not in it yet, so the counts run a little low.
                SELECT @target  = CAST(t.target_data AS xml),
                       @dropped = s.dropped_event_count
                FROM sys.dm_xe_sessions AS s
                JOIN sys.dm_xe_session_targets AS t
                  ON t.event_session_address = s.address
                WHERE s.name = @xe_session
                  AND t.target_name = N'histogram';

                EXEC (N'ALTER EVENT SESSION [capture_snapshot_latch_acquired] ON SERVER STATE = STOP;');
                EXEC (N'DROP EVENT SESSION [capture_snapshot_latch_acquired] ON SERVER;');

                -- Each slot is <Slot count="N"><value>KEY</value></Slot>, KEY
                -- the latch_class map key; sys.dm_xe_map_values names it.  The
                -- map calls the buffer latch BUF where sys.dm_os_latch_stats
                -- says BUFFER: use the latter, so the fit can match the rows.
                INSERT INTO #xevent (name, count)
                SELECT v.name, SUM(v.cnt)
                FROM (
                    SELECT CASE WHEN n.name = N'BUF' THEN N'BUFFER' ELSE LEFT(n.name, 256) END AS name,
                           s.cnt
                    FROM @target.nodes('/HistogramTarget/Slot') AS h(slot)
                    CROSS APPLY (SELECT ISNULL(h.slot.value('@count', 'bigint'), 0)  AS cnt,
                                        h.slot.value('(value)[1]', 'nvarchar(256)') AS slot_value) AS s
                    OUTER APPLY (SELECT TOP (1) m.map_value
                                 FROM sys.dm_xe_map_values AS m
                                 WHERE m.name = N'latch_class'
                                   AND m.map_key = TRY_CONVERT(int, s.slot_value)
                                 ORDER BY m.map_value) AS mv
                    CROSS APPLY (SELECT COALESCE(mv.map_value COLLATE DATABASE_DEFAULT,
                                                 s.slot_value COLLATE DATABASE_DEFAULT) AS name) AS n
                ) AS v
                WHERE v.name IS NOT NULL
                GROUP BY v.name;
            END;
        END;

        -- The snapshot's time: the interval is the difference of the two.
        IF @snap = 1 SET @t1 = SYSDATETIME(); ELSE SET @t2 = SYSDATETIME();

        -- book excerpt start: what each of the two reads takes from the four core views
        -- Latches: waits, wait time and the longest wait, per latch class.
        INSERT INTO #snap (snap, source, name, count, time_ms, max_time_ms)
        SELECT @snap, 'latch', l.latch_class,
               SUM(l.waiting_requests_count), SUM(l.wait_time_ms), MAX(l.max_wait_time_ms)
        FROM sys.dm_os_latch_stats AS l
        GROUP BY l.latch_class;

        -- Waits: every wait type, the benign ones too (the fit filters them).
        INSERT INTO #snap (snap, source, name, count, time_ms, max_time_ms, signal_time_ms)
        SELECT @snap, 'wait', w.wait_type,
               SUM(w.waiting_tasks_count), SUM(w.wait_time_ms), MAX(w.max_wait_time_ms),
               SUM(w.signal_wait_time_ms)
        FROM sys.dm_os_wait_stats AS w
        GROUP BY w.wait_type;

        -- Spinlocks: count = collisions, time_ms = sleep_time.
        INSERT INTO #snap (snap, source, name, count, time_ms, spins, backoffs)
        SELECT @snap, 'spinlock', sp.name,
               SUM(sp.collisions), SUM(sp.sleep_time), SUM(sp.spins), SUM(CONVERT(bigint, sp.backoffs))
        FROM sys.dm_os_spinlock_stats AS sp
        GROUP BY sp.name;

        -- Schedulers: one row per scheduler that runs user work.
        INSERT INTO #snap (snap, source, name, count, time_ms)
        SELECT @snap, 'scheduler', CONVERT(nvarchar(10), s.scheduler_id),
               s.context_switches_count, s.total_cpu_usage_ms
        FROM sys.dm_os_schedulers AS s
        WHERE s.status = N'VISIBLE ONLINE';
        -- book excerpt end

        -- Performance counters.  The two per-second counters are cumulative (cntr_type
        -- 272696576, PERF_COUNTER_BULK_COUNT: the DMV holds a running total) and the two
        -- SQLServer:Columnstore ones are totals since start-up, so their increase over the
        -- interval is the number wanted.  The script takes Version Generation rate (KB/s) to be
        -- cumulative too; no Microsoft page gives its type, so check cntr_type on your server:
        -- if it is 65792 the DMV holds the current rate, and the KB of versions read from it is wrong.
        -- A counter the DMV lacks gets a row with an empty count.  Each counter is read from one instance, never the
        -- largest of several: Transactions/sec from @database; the
        -- Columnstore ones from @database where the object has an instance
        -- for it, else from _Total (or the object's only, unnamed instance);
        -- the others from their object's single instance.  Temp Tables Creation Rate is cumulative like
        -- the per-second counters (it counts creations, not a cached object's reuse); Temp Tables For
        -- Destruction, Active Temp Tables and Version Store Size (KB) are point-in-time values, which the
        -- differences below take as the second read found them.
        INSERT INTO #snap (snap, source, name, count)
        SELECT @snap, 'counter', c.counter_name, p.cntr_value
        FROM (VALUES (N'Batch Requests/sec',             N'%SQL Statistics%', CAST(NULL AS sysname), 0),
                     (N'Transactions/sec',               N'%:Databases%',     @database,             0),
                     (N'Version Generation rate (KB/s)', N'%:Transactions%',  CAST(NULL AS sysname), 0),
                     (N'Total Rowgroups Compressed',     N'%:Columnstore%',   CAST(NULL AS sysname), 1),
                     (N'Delta Rowgroups Created',        N'%:Columnstore%',   CAST(NULL AS sysname), 1),
                     (N'Temp Tables Creation Rate',      N'%:General Statistics%', CAST(NULL AS sysname), 0),
                     (N'Temp Tables For Destruction',    N'%:General Statistics%', CAST(NULL AS sysname), 0),
                     (N'Active Temp Tables',             N'%:General Statistics%', CAST(NULL AS sysname), 0),
                     (N'Version Store Size (KB)',        N'%:Transactions%',  CAST(NULL AS sysname), 0),
                     (N'Version Cleanup rate (KB/s)',    N'%:Transactions%',  CAST(NULL AS sysname), 0)
             ) AS c (counter_name, object_pattern, instance_name, database_or_total)
        OUTER APPLY (SELECT TOP (1) pc.cntr_value
                     FROM sys.dm_os_performance_counters AS pc
                     WHERE pc.object_name LIKE c.object_pattern
                       AND RTRIM(pc.counter_name) = c.counter_name
                       AND (c.instance_name IS NULL OR RTRIM(pc.instance_name) = c.instance_name)
                       AND (c.database_or_total = 0
                            OR RTRIM(pc.instance_name) IN (@database, N'_Total', N''))
                     ORDER BY CASE RTRIM(pc.instance_name) WHEN @database THEN 0
                                                           WHEN N'_Total' THEN 1 ELSE 2 END) AS p;

        -- The resource semaphores' forced grants and grant time-outs since start-up, summed over pools.
        INSERT INTO #snap (snap, source, name, count)
        SELECT @snap, 'semaphore', v.name, v.count
        FROM (SELECT SUM(CONVERT(bigint, rs.forced_grant_count))  AS forced_grant_count,
                     SUM(CONVERT(bigint, rs.timeout_error_count)) AS timeout_error_count
              FROM sys.dm_exec_query_resource_semaphores AS rs) AS t
        CROSS APPLY (VALUES (N'forced_grant_count', t.forced_grant_count),
                            (N'timeout_error_count', t.timeout_error_count)) AS v (name, count);

        -- Database files, of every database: writes and reads and the time they stalled, one source each.
        -- Only data and log files (ROWS, LOG) whose type #files knows.
        INSERT INTO #snap (snap, source, name, count, time_ms)
        SELECT @snap, v.source, CONCAT(vfs.database_id, N':', vfs.file_id, N':', f.type_desc), v.count, v.time_ms
        FROM sys.dm_io_virtual_file_stats(NULL, NULL) AS vfs
        JOIN #files AS f
          ON f.database_id = vfs.database_id
         AND f.file_id = vfs.file_id
        CROSS APPLY (VALUES ('file_write', vfs.num_of_writes, vfs.io_stall_write_ms),
                            ('file_read',  vfs.num_of_reads,  vfs.io_stall_read_ms)) AS v (source, count, time_ms)
        WHERE f.type_desc IN (N'ROWS', N'LOG');

        -- The largest degree of parallelism among the user requests running now (this one left out): the
        -- MAXDOP the queries really ran at, whatever a hint or a database-scoped setting made it.
        SELECT @seen = MAX(r.dop)
        FROM sys.dm_exec_requests AS r
        JOIN sys.dm_exec_sessions AS s
          ON s.session_id = r.session_id
        WHERE s.is_user_process = 1
          AND r.session_id <> @@SPID;
        IF @seen > @dop SET @dop = @seen;

        -- At the second read: the user sessions that started a request during the interval, or have one now.
        -- A session that loops with time away from the server between its requests counts too, which a
        -- count of the requests running at one instant would miss.
        -- Those in @database too (sys.dm_exec_sessions.database_id, the session's current database): the
        -- workload whose indexes the capture reads, apart from the other work on the instance.
        IF @snap = 2
            SELECT @sessions = COUNT(*),
                   @database_sessions = COUNT(CASE WHEN s.database_id = @database_id THEN 1 END)
            FROM sys.dm_exec_sessions AS s
            WHERE s.is_user_process = 1
              AND s.session_id <> @@SPID
              AND (s.last_request_start_time >= @t1
                   OR EXISTS (SELECT 1 FROM sys.dm_exec_requests AS r WHERE r.session_id = s.session_id));

        -- The CPU of @database's user sessions: sys.dm_exec_sessions.cpu_time (ms, since each session's login,
        -- updated as its requests run) at each read; a session's use is the second value less the first, and a
        -- session that logged in between the reads (not in #cpu with the same login_time) counts from 0.
        IF @snap = 1
            INSERT INTO #cpu (session_id, login_time, cpu_time)
            SELECT s.session_id, s.login_time, s.cpu_time
            FROM sys.dm_exec_sessions AS s
            WHERE s.is_user_process = 1 AND s.session_id <> @@SPID AND s.database_id = @database_id;
        ELSE
            SELECT @database_cpu_ms = ISNULL(SUM(CASE WHEN s.cpu_time >= ISNULL(c.cpu_time, 0)
                                                      THEN s.cpu_time - ISNULL(c.cpu_time, 0) END), 0)
            FROM sys.dm_exec_sessions AS s
            LEFT JOIN #cpu AS c
              ON c.session_id = s.session_id AND c.login_time = s.login_time
            WHERE s.is_user_process = 1 AND s.session_id <> @@SPID AND s.database_id = @database_id;

        -- Per index of @database (summed over partitions): its page latch
        -- waits, their part on non-leaf pages (tree_), the rows inserted and
        -- updated at the leaf level and the leaf pages allocated, one source
        -- each.  Last, as it can take a moment on a database with many
        -- indexes; only the indexes that have waited or been inserted into or
        -- updated are kept (an index absent from the first snapshot counts
        -- from 0).
        INSERT INTO #snap (snap, source, name, object_id, index_id, count, time_ms)
        SELECT @snap, v.source, CONCAT(N'object_', o.object_id, N'.index_', o.index_id),
               o.object_id, o.index_id, v.count, v.time_ms
        FROM (SELECT s.object_id, s.index_id,
                     SUM(s.page_latch_wait_count)      AS waits,
                     SUM(s.page_latch_wait_in_ms)      AS wait_ms,
                     SUM(s.tree_page_latch_wait_count) AS tree_waits,
                     SUM(s.tree_page_latch_wait_in_ms) AS tree_wait_ms,
                     SUM(s.leaf_insert_count)          AS inserts,
                     SUM(s.leaf_update_count)          AS updates,
                     SUM(s.leaf_allocation_count)      AS allocations
              FROM sys.dm_db_index_operational_stats(@database_id, NULL, NULL, NULL) AS s
              GROUP BY s.object_id, s.index_id
              HAVING SUM(s.page_latch_wait_count) > 0 OR SUM(s.page_latch_wait_in_ms) > 0
                  OR SUM(s.leaf_insert_count) > 0 OR SUM(s.leaf_update_count) > 0) AS o
        CROSS APPLY (VALUES ('index',            o.waits,       o.wait_ms),
                            ('index_tree',       o.tree_waits,  o.tree_wait_ms),
                            ('index_insert',     o.inserts,     CAST(NULL AS bigint)),
                            ('index_update',     o.updates,     CAST(NULL AS bigint)),
                            ('index_allocation', o.allocations, CAST(NULL AS bigint))) AS v (source, count, time_ms);

        SET @snap += 1;
    END;

    ---------------------------------------------------------------------------
    -- The differences.  Negative ones are kept: they mean a restart or a
    -- DBCC SQLPERF clear came between the snapshots, and the fit says so.
    -- Some counters are treated apart, as they go down for other reasons:
    --   * context_switches_count (scheduler) and backoffs (spinlock) are int
    --     columns that wrap past 2,147,483,647 to negative numbers: a wrap
    --     (first >= 0, second < 0) is undone by adding 2^32;
    --   * three performance counters are point-in-time values, not running
    --     totals: the second read is kept as it is;
    --   * an index's counters restart when its metadata leaves the cache, and
    --     a database file's when its database is brought online again (after
    --     being taken offline, or closed by AUTO_CLOSE): if they went down,
    --     the second snapshot's values (the counts since the restart) are used.
    ---------------------------------------------------------------------------
    INSERT INTO #delta (source, name, object_id, index_id, count, time_ms, max_time_ms, signal_time_ms,
                        spins, backoffs)
    SELECT b.source, b.name, b.object_id, b.index_id,
           CASE WHEN b.source = 'scheduler' AND d.count < 0 AND b.count < 0 AND a.count >= 0
                    THEN d.count + CAST(4294967296 AS bigint)
                WHEN b.source = 'counter' AND b.name IN (N'Temp Tables For Destruction', N'Active Temp Tables',
                                                         N'Version Store Size (KB)')
                    THEN b.count                 -- point in time: the second read, not a difference
                WHEN (b.source LIKE 'index%' OR b.source IN ('file_write', 'file_read'))
                     AND (d.count < 0 OR d.time_ms < 0)
                    THEN b.count
                ELSE d.count END,
           CASE WHEN (b.source LIKE 'index%' OR b.source IN ('file_write', 'file_read'))
                     AND (d.count < 0 OR d.time_ms < 0)
                    THEN b.time_ms
                ELSE d.time_ms END,
           b.max_time_ms,                       -- the DMV's maximum, as the second snapshot read it
           d.signal_time_ms,
           d.spins,
           CASE WHEN b.source = 'spinlock' AND d.backoffs < 0 AND b.backoffs < 0 AND a.backoffs >= 0
                    THEN d.backoffs + CAST(4294967296 AS bigint)
                ELSE d.backoffs END
    FROM #snap AS b
    LEFT JOIN #snap AS a
      ON a.snap = 1 AND a.source = b.source AND a.name = b.name
    CROSS APPLY (SELECT b.count          - ISNULL(a.count, 0)          AS count,
                        b.time_ms        - ISNULL(a.time_ms, 0)        AS time_ms,
                        b.signal_time_ms - ISNULL(a.signal_time_ms, 0) AS signal_time_ms,
                        b.spins          - ISNULL(a.spins, 0)          AS spins,
                        b.backoffs       - ISNULL(a.backoffs, 0)       AS backoffs) AS d
    WHERE b.snap = 2;
    -- (A column the source does not use is NULL in both snapshots, so its
    -- difference is NULL too: an empty cell.)

    ---------------------------------------------------------------------------
    -- Index names: schema.table.index.  OBJECT_SCHEMA_NAME and OBJECT_NAME
    -- take the database id; the index's name is in @database's sys.indexes,
    -- read with dynamic SQL.  If that fails (no access to the database), the
    -- rows keep their object_<id>.index_<id> names and a # comment says why.
    ---------------------------------------------------------------------------
    IF EXISTS (SELECT 1 FROM #delta WHERE source LIKE 'index%')
    BEGIN
        SET @sql = N'
UPDATE d
SET d.name = CONCAT(
        COALESCE(OBJECT_SCHEMA_NAME(d.object_id, @database_id) + N''.'' + OBJECT_NAME(d.object_id, @database_id),
                 CONCAT(N''object_'', d.object_id)),
        N''.'',
        COALESCE(i.name COLLATE DATABASE_DEFAULT,
                 CASE WHEN d.index_id = 0 THEN N''HEAP'' ELSE CONCAT(N''index_'', d.index_id) END))
FROM #delta AS d
LEFT JOIN ' + QUOTENAME(@database) + N'.sys.indexes AS i
       ON i.object_id = d.object_id
      AND i.index_id = d.index_id
WHERE d.source LIKE ''index%'';';

        BEGIN TRY
            EXEC sys.sp_executesql @sql, N'@database_id int', @database_id = @database_id;
        END TRY
        BEGIN CATCH
            SET @names_note = CONCAT(N'# index names of ', @database, N' could not be read (',
                                     REPLACE(REPLACE(ERROR_MESSAGE(), NCHAR(13), N' '), NCHAR(10), N' '),
                                     N'): the index rows are named object_<id>.index_<id>');
        END CATCH;

        -- Two rows may not share a name in the file: should two names come
        -- out the same, add the ids to them.
        WITH named AS (
            SELECT name, object_id, index_id, COUNT(*) OVER (PARTITION BY source, name) AS n
            FROM #delta
            WHERE source LIKE 'index%'
        )
        UPDATE named
        SET name = CONCAT(name, N' (', object_id, N'.', index_id, N')')
        WHERE n > 1;
    END;

    ---------------------------------------------------------------------------
    -- The output rows.
    ---------------------------------------------------------------------------
    -- The header.
    INSERT INTO #out (grp, k, raw)
    VALUES (0, 0, N'source,name,count,time_ms,max_time_ms,signal_time_ms,spins,backoffs,value');

    -- The settings.
    DECLARE @interval_text nvarchar(20) =
        CONVERT(nvarchar(20), CONVERT(decimal(12, 3), DATEDIFF(MILLISECOND, @t1, @t2) / 1000.0));
    DECLARE @schedulers int =
        (SELECT COUNT(*) FROM #snap WHERE snap = 2 AND source = 'scheduler');
    DECLARE @maxdop bigint =
        (SELECT CONVERT(bigint, value_in_use) FROM sys.configurations WHERE name = N'max degree of parallelism');
    DECLARE @max_memory_mb bigint =
        (SELECT CONVERT(bigint, value_in_use) FROM sys.configurations WHERE name = N'max server memory (MB)');
    -- The mean of the runnable tasks over the samples, to 0.001 (a sample is a whole number).
    DECLARE @runnable_text nvarchar(20) =
        CONVERT(nvarchar(20), CONVERT(decimal(12, 3), @runnable / (1.0 * NULLIF(@page_samples, 0))));
    DECLARE @tempdb_files int =
        (SELECT COUNT(*) FROM #files WHERE database_id = 2 AND type_desc = N'ROWS');
    -- 1 when tempdb's system tables are memory-optimized, 0 when not; NULL (no row) before SQL Server 2019.
    DECLARE @tempdb_metadata sql_variant = SERVERPROPERTY(N'IsTempdbMetadataMemoryOptimized');
    -- @@VERSION's first line, commas made spaces (the row is still quoted if it needs it).
    DECLARE @version nvarchar(400) =
        LTRIM(RTRIM(REPLACE(REPLACE(REPLACE(
            LEFT(@@VERSION, CHARINDEX(NCHAR(10), @@VERSION + NCHAR(10)) - 1),
            NCHAR(13), N''), NCHAR(9), N' '), N',', N' ')));

    INSERT INTO #out (grp, k, source, name, value)
    VALUES (1, 1, 'setting', N'interval_s',           @interval_text),
           (1, 2, 'setting', N'schedulers',           CONVERT(nvarchar(20), @schedulers)),
           (1, 3, 'setting', N'maxdop',               CONVERT(nvarchar(20), @maxdop)),
           (1, 4, 'setting', N'sessions',             CONVERT(nvarchar(20), @sessions)),
           (1, 5, 'setting', N'database_sessions',    CONVERT(nvarchar(20), @database_sessions)),
           (1, 6, 'setting', N'database_cpu_ms',      CONVERT(nvarchar(20), @database_cpu_ms)),
           (1, 7, 'setting', N'request_dop',          CONVERT(nvarchar(20), @dop)),
           (1, 8, 'setting', N'max_server_memory_mb', CONVERT(nvarchar(20), @max_memory_mb)),
           (1, 9, 'setting', N'version',              @version),
           (1, 10, 'setting', N'database',             @database),
           (1, 11, 'setting', N'database_id',          CONVERT(nvarchar(20), @database_id)),
           (1, 16, 'setting', N'page_samples',        CONVERT(nvarchar(20), @page_samples));

    IF @memory_model IS NOT NULL
        INSERT INTO #out (grp, k, source, name, value)
        VALUES (1, 12, 'setting', N'sql_memory_model', @memory_model);

    IF @runnable_text IS NOT NULL
        INSERT INTO #out (grp, k, source, name, value)
        VALUES (1, 13, 'setting', N'runnable_tasks', @runnable_text);

    IF @tempdb_files > 0
        INSERT INTO #out (grp, k, source, name, value)
        VALUES (1, 14, 'setting', N'tempdb_data_files', CONVERT(nvarchar(20), @tempdb_files));

    IF @tempdb_metadata IS NOT NULL
        INSERT INTO #out (grp, k, source, name, value)
        VALUES (1, 15, 'setting', N'tempdb_metadata_memory_optimized', CONVERT(nvarchar(20), CONVERT(int, @tempdb_metadata)));

    -- Latch, wait, spinlock, scheduler, counter, semaphore, index and file rows:
    -- those that moved (count or time different from zero, or for a spinlock
    -- its spins or backoffs), every scheduler, the counters and the semaphore.  Within a source,
    -- the largest time first; schedulers by id; counters in a fixed order.
    INSERT INTO #out (grp, k, source, name, count, time_ms, max_time_ms, signal_time_ms, spins, backoffs)
    SELECT g.grp,
           ROW_NUMBER() OVER (PARTITION BY d.source
                              ORDER BY CASE WHEN d.source = 'scheduler' THEN TRY_CONVERT(int, d.name) END,
                                       CASE WHEN d.source = 'counter'
                                            THEN CASE d.name WHEN N'Batch Requests/sec'             THEN 1
                                                             WHEN N'Transactions/sec'               THEN 2
                                                             WHEN N'Version Generation rate (KB/s)' THEN 3
                                                             WHEN N'Total Rowgroups Compressed'     THEN 4
                                                             WHEN N'Delta Rowgroups Created'        THEN 5
                                                             WHEN N'Temp Tables Creation Rate'      THEN 6
                                                             WHEN N'Temp Tables For Destruction'    THEN 7
                                                             WHEN N'Active Temp Tables'             THEN 8
                                                             WHEN N'Version Store Size (KB)'        THEN 9
                                                             ELSE 10 END END,
                                       CASE WHEN d.source = 'semaphore' THEN d.name END,
                                       d.time_ms DESC, d.count DESC, d.name),
           d.source, d.name, d.count, d.time_ms, d.max_time_ms, d.signal_time_ms, d.spins, d.backoffs
    FROM #delta AS d
    CROSS APPLY (SELECT CASE d.source WHEN 'latch'     THEN 2
                                      WHEN 'wait'      THEN 3
                                      WHEN 'spinlock'  THEN 4
                                      WHEN 'scheduler' THEN 6
                                      WHEN 'counter'   THEN 7
                                      WHEN 'index'     THEN 8
                                      WHEN 'index_tree'       THEN 9
                                      WHEN 'index_insert'     THEN 10
                                      WHEN 'index_update'     THEN 11
                                      WHEN 'index_allocation' THEN 12
                                      WHEN 'semaphore'        THEN 13
                                      WHEN 'file_write'       THEN 14
                                      WHEN 'file_read'        THEN 15 END) AS g (grp)
    WHERE d.source IN ('scheduler', 'counter', 'semaphore')
       OR d.count <> 0
       OR d.time_ms <> 0
       OR d.spins <> 0
       OR d.backoffs <> 0;

    -- The latch_acquired counts (empty unless @xevents = 1), most first.  A
    -- session that lost events (ALLOW_SINGLE_EVENT_LOSS, its buffers full)
    -- undercounts by an unknown amount: its counts are left out, with a
    -- comment saying why, so the fit says the acquire rate is missing rather
    -- than use a wrong one.
    IF ISNULL(@dropped, 0) = 0
        INSERT INTO #out (grp, k, source, name, count)
        SELECT 5, ROW_NUMBER() OVER (ORDER BY x.count DESC, x.name), 'xevent', x.name, x.count
        FROM #xevent AS x
        WHERE x.count > 0;

    IF @xevents = 1 AND @dropped > 0
        INSERT INTO #out (grp, k, raw)
        VALUES (5, 2147483647,
                CONCAT(N'# the event session dropped ', @dropped, N' latch_acquired events of ', @xevent_class,
                       N' (its buffers were full): its counts are left out; capture again with a shorter interval'));

    IF @names_note IS NOT NULL
        INSERT INTO #out (grp, k, raw) VALUES (8, 2147483647, @names_note);

    IF @files_hidden > 0
        INSERT INTO #out (grp, k, raw)
        VALUES (14, 2147483647,
                CONCAT(N'# the types of ', @files_hidden, N' database files could not be read (sys.master_files ',
                       N'shows a file only with VIEW ANY DEFINITION, CREATE DATABASE or ALTER ANY DATABASE): ',
                       N'their file_write and file_read rows are left out'));

    -- The page latch waiters seen in the page_samples samples, by page, most first (the 20 busiest pages).
    INSERT INTO #out (grp, k, source, name, count)
    SELECT TOP (20) 16, ROW_NUMBER() OVER (ORDER BY SUM(p.count) DESC, p.name), 'page', p.name, SUM(p.count)
    FROM #pages AS p
    GROUP BY p.name
    ORDER BY SUM(p.count) DESC, p.name;

    -- Each tempdb data file's size in MB now (size is in 8-KB pages).  tempdb's own sys.database_files holds
    -- the current size, which proportional fill works with (sys.master_files holds the size tempdb is
    -- created at on a restart); every login can read it.  A failure leaves the rows out.
    BEGIN TRY
        INSERT INTO #out (grp, k, source, name, count)
        SELECT 17, ROW_NUMBER() OVER (ORDER BY df.file_id), 'file_size', CONCAT(N'2:', df.file_id, N':ROWS'),
               CONVERT(bigint, df.size) * 8 / 1024
        FROM tempdb.sys.database_files AS df
        WHERE df.type = 0;
    END TRY
    BEGIN CATCH
        INSERT INTO #out (grp, k, raw)
        VALUES (17, 0, N'# the sizes of tempdb''s data files could not be read (tempdb.sys.database_files)');
    END CATCH;

    ---------------------------------------------------------------------------
    -- The one result set: one column, csv, one line a row.  Empty cells for
    -- NULLs (CONCAT makes NULL ''); integers as plain digits; a name or value
    -- with a comma or a double quote is quoted, its quotes doubled; line
    -- breaks in names become spaces (a row must stay on one line).
    -- nvarchar(4000), not nvarchar(max): sqlcmd cuts (max) columns to 256
    -- characters unless -y is given, and -y cannot be used with -W.
    ---------------------------------------------------------------------------
    SELECT CONVERT(nvarchar(4000),
                   CASE WHEN o.raw IS NOT NULL THEN o.raw
                        ELSE CONCAT(o.source,         N',',
                                    q.name,           N',',
                                    o.count,          N',',
                                    o.time_ms,        N',',
                                    o.max_time_ms,    N',',
                                    o.signal_time_ms, N',',
                                    o.spins,          N',',
                                    o.backoffs,       N',',
                                    q.value)
                   END) AS csv
    FROM #out AS o
    CROSS APPLY (SELECT REPLACE(REPLACE(o.name,  NCHAR(13), N' '), NCHAR(10), N' ') AS name,
                        REPLACE(REPLACE(o.value, NCHAR(13), N' '), NCHAR(10), N' ') AS value) AS c
    CROSS APPLY (SELECT CASE WHEN c.name LIKE N'%[,"]%'
                             THEN N'"' + REPLACE(c.name, N'"', N'""') + N'"'
                             ELSE c.name END AS name,
                        CASE WHEN c.value LIKE N'%[,"]%'
                             THEN N'"' + REPLACE(c.value, N'"', N'""') + N'"'
                             ELSE c.value END AS value) AS q
    ORDER BY o.grp, o.k;

END TRY
BEGIN CATCH
    -- Leave no event session running behind a failed run, then report the error.
    IF EXISTS (SELECT 1 FROM sys.dm_xe_sessions WHERE name = @xe_session)
        EXEC (N'ALTER EVENT SESSION [capture_snapshot_latch_acquired] ON SERVER STATE = STOP;');
    IF EXISTS (SELECT 1 FROM sys.server_event_sessions WHERE name = @xe_session)
        EXEC (N'DROP EVENT SESSION [capture_snapshot_latch_acquired] ON SERVER;');
    DROP TABLE IF EXISTS #snap, #delta, #xevent, #pages, #files, #cpu, #out;
    THROW;
END CATCH;

DROP TABLE IF EXISTS #snap, #delta, #xevent, #pages, #files, #cpu, #out;
