package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/backup"
	"shoal/internal/data"
	"shoal/internal/fusefs"
	"shoal/internal/journal"
	"shoal/internal/meta"
	"shoal/internal/opstat"
	"shoal/internal/rundir"
	"shoal/internal/vfs"
	"shoal/internal/volume"
)

// serveSupervised is a server process under a supervisor (supervise.go):
// the first (role serve) mounts and sends the connection to the
// supervisor; a successor (role takeover) adopts what the journal says
// its predecessor held and serves the same connection.
func serveSupervised(ctx context.Context, metaURL, mp, role string, o mountOptions) error {
	os.Unsetenv(serveEnv)
	ctl := os.NewFile(3, "ctl")
	err := serveChild(ctx, metaURL, mp, role, o, ctl)
	if err != nil {
		_, _ = ctl.Write([]byte("error " + err.Error()))
	}
	return err
}

func serveChild(ctx context.Context, metaURL, mp, role string, o mountOptions, ctl *os.File) error {
	if _, err := rundir.Ensure(); err != nil {
		return err
	}
	dir := journalDir(mp)
	// The journal directory is this process's from here until it exits
	// (package journal, "Ownership"): a new mount waits for the previous
	// server of the mountpoint to finish closing, which removes its
	// journal, and mounts only then (so no other mount is at mp while
	// this server lives, as srv.Wait's check below assumes).
	lock, err := journal.Acquire(dir, max(o.flushTimeout, 2*time.Minute)+time.Minute, func(holder int) {
		fmt.Fprintf(os.Stderr, "shoal: waiting for the previous server of %s (pid %d) to finish closing\n", mp, holder)
	})
	if err != nil {
		return err
	}
	defer lock.Close()
	var st journal.State
	var init []byte
	if role == roleTakeOver {
		if st, err = journal.Recover(dir); err != nil {
			return err
		}
		if init, err = journal.LoadInit(dir); err != nil {
			return err
		}
	}
	sv, err := prepare(ctx, metaURL, mp, o, meta.SessionID(st.Session))
	if err != nil {
		return err
	}
	defer sv.close()
	var old journal.State
	if role != roleTakeOver {
		if old, err = takeOldJournal(sv, dir); err != nil {
			_ = sv.vol.Close(ctx)
			return err
		}
	} else {
		if err := sv.vol.FS.Adopt(ctx, st); err != nil {
			_ = sv.vol.Close(ctx)
			return fmt.Errorf("taking over: %w", err)
		}
		sv.fsys.AdoptOwners(st.Owners)
		sv.fsys.AdoptReplies(st)
	}
	jst := sv.vol.FS.State()
	jst.Owners, jst.NextSeq, jst.Replies = st.Owners, st.NextSeq, st.Replies
	j, err := journal.Create(dir, jst, journal.Options{
		Sync: func() error { return sv.vol.FS.Sync(context.Background()) }, Logger: sv.log,
		SegmentSize: testSegmentSize(),
	})
	if err != nil {
		_ = sv.vol.Close(ctx)
		return err
	}
	if err := journal.SaveVolume(dir, sv.vol.Format.UUID); err != nil {
		_ = sv.vol.Close(ctx)
		return fmt.Errorf("journal: %w", err)
	}
	sv.vol.FS.AttachJournal(j)
	sv.fsys.SetJournal(j)
	if err := salvage(ctx, sv, old, dir); err != nil {
		_ = sv.vol.Close(ctx)
		return err
	}
	srv, err := connect(role, mp, sv.fsys, sv.mountConfig(o), dir, init, ctl)
	if err != nil {
		_ = sv.vol.Close(ctx)
		return err
	}
	removePid := writePidFile(mp)
	sv.log.Info("serving", "role", role, "volume", sv.vol.Format.Name, "mountpoint", mp, "pid", os.Getpid(),
		"adopted_handles", len(st.Handles), "replayed_writes", len(st.Writes), "kept_replies", len(st.Replies))
	stop := handleSignals(sv.vol, dirUnmounter(mp), sv.log)
	defer stop()
	_, _ = ctl.Write([]byte("ready")) // after the handler: the supervisor forwards SIGTERM from now on
	go awaitQuiesce(ctl, sv, j, mp)
	defer sv.runBackups(metaURL, o)()
	srv.Wait()
	if _, _, mounted := mountedAt(mp); mounted {
		// The connection failed under a live mount: not an unmount.
		// Keep the journal and let the supervisor start a successor.
		_ = sv.vol.FS.Sync(context.Background())
		_ = j.Close()
		return fmt.Errorf("lost the kernel connection of %s while it is still mounted", mp)
	}
	sv.log.Info("unmounted; flushing and closing", "mountpoint", mp)
	testCloseDelay()
	err = sv.vol.Close(context.Background())
	_ = j.Remove()
	removePid()
	journal.Unlock(lock) // the mount ended: nothing left to own
	return err
}

// connect mounts (role serve, sending the connection to the supervisor)
// or takes the supervisor's connection over (fd 4).
func connect(role, mp string, fsys *fusefs.FS, cfg fusefs.MountConfig, dir string, init []byte, ctl *os.File) (interface{ Wait() }, error) {
	if role == roleTakeOver {
		return fusefs.TakeOver(4, init, fsys, cfg)
	}
	fd, err := fusefs.OpenConnection(mp, cfg)
	if err != nil {
		return nil, err
	}
	if err := unix.Sendmsg(int(ctl.Fd()), []byte("conn"), unix.UnixRights(fd), nil, 0); err != nil {
		_ = syscall.Unmount(mp, syscall.MNT_DETACH)
		return nil, fmt.Errorf("handing the connection to the supervisor: %w", err)
	}
	return fusefs.MountFd(fd, mp, fsys, cfg, dir)
}

// awaitQuiesce hands over when the supervisor asks: requests in flight
// are answered (their replies written: fusefs.FS.AwaitReplies), later ones
// held for the successor, every buffered write committed; then the process
// exits without ending its session, which the successor resumes.
func awaitQuiesce(ctl *os.File, sv *serving, j *journal.Journal, mp string) {
	buf := make([]byte, 64)
	for {
		n, err := ctl.Read(buf)
		if err != nil {
			return
		}
		if string(buf[:n]) != "quiesce" {
			continue
		}
		sv.fsys.Quiesce()
		sv.metrics.close() // the successor listens on the same address
		if err := sv.vol.FS.Sync(context.Background()); err != nil {
			sv.log.Warn("upgrade: flushing before the handover failed; the successor replays the writes from the journal", "err", err)
		}
		_ = j.Close()
		start := time.Now()
		if err := awaitReplies(sv.fsys, mp); err != nil {
			sv.log.Warn("upgrade: cannot tell that every reply reached the kernel; an operation answered at the last moment may run again in the new server", "err", err)
		}
		sv.log.Info("handing the mount over to a new server", "replies_wait", time.Since(start).Round(time.Microsecond))
		_, _ = ctl.Write([]byte("quiesced"))
		os.Exit(0)
	}
}

// awaitReplies waits until go-fuse has written the replies of the
// requests that finished before the quiesce (at most replyTimeout).
func awaitReplies(fsys *fusefs.FS, mp string) error {
	minor, ok := mountMinor(mp)
	if !ok {
		return fmt.Errorf("%s is not in the mount table", mp)
	}
	return fsys.AwaitReplies(minor, replyTimeout)
}

// replyTimeout bounds the wait for replies already due: microseconds,
// unless the kernel has requests queued that go-fuse has not read.
const replyTimeout = 2 * time.Second

// dirUnmounter unmounts a mountpoint directly: the server of a supervised
// mount does not know it by go-fuse's means.
type dirUnmounter string

func (d dirUnmounter) Unmount() error {
	if err := syscall.Unmount(string(d), 0); err != nil {
		return fmt.Errorf("unmount %s: %w", string(d), err)
	}
	return nil
}

// serving is what a process serving a mount holds, whichever way it got
// the kernel connection.
type serving struct {
	log     *slog.Logger
	vol     *volume.Volume
	fsys    *fusefs.FS
	metrics *mountMetrics
	closers []func()
}

// prepare opens the volume (with metrics, if asked), begins or resumes the
// engine session and builds the FUSE adaptor.
func prepare(ctx context.Context, metaURL, mp string, o mountOptions, resume meta.SessionID) (*serving, error) {
	raiseProcs()
	logger, closeLog, err := openLogger(o.logFile, o.debug)
	if err != nil {
		return nil, err
	}
	sv := &serving{log: logger, closers: []func(){closeLog}}
	fail := func(err error) (*serving, error) { sv.close(); return nil, err }
	if o.cpuProfile != "" {
		stopProfile, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			return fail(err)
		}
		sv.closers = append(sv.closers, stopProfile)
	}
	if sv.metrics, err = listenMetrics(o.metricsAddr); err != nil {
		return fail(err)
	}
	sv.closers = append(sv.closers, sv.metrics.close)
	sv.vol, err = volume.Open(ctx, metaURL, volume.Options{
		Data:      data.Config{BufferSize: o.bufferSize, CacheSize: o.cacheSize},
		VFS:       vfs.Config{Strict: o.strict, FlushTimeout: o.flushTimeout, DeleteDelay: o.deleteDelay},
		Logger:    logger,
		Secret:    o.secret.secret(),
		StoreHook: sv.metrics.storeHook(),
	})
	if err != nil {
		return fail(DatabaseHint(err, metaURL))
	}
	if o.strict {
		o.attrTimeout, o.entryTimeout, o.negativeTimeout = 0, 0, 0
	}
	cctx, stopConsole := context.WithCancel(context.Background())
	sv.closers = append(sv.closers, stopConsole)
	if err := o.console.start(cctx, sv.vol.Engine, sv.vol.Format, logger); err != nil {
		_ = sv.vol.Close(ctx)
		return fail(err)
	}
	ops := opstat.New(fusefs.OpNames(), sv.metrics.observer())
	scfg := sessionConfig(mp, o, ops)
	scfg.Resume = resume
	if err := sv.vol.FS.BeginSession(ctx, scfg); err != nil {
		_ = sv.vol.Close(ctx)
		return fail(fmt.Errorf("registering the mount with the metadata engine: %w", err))
	}
	sv.fsys = fusefs.New(sv.vol.FS, fusefs.Options{
		AttrTimeout: o.attrTimeout, EntryTimeout: o.entryTimeout, NegativeTimeout: o.negativeTimeout, Logger: logger,
		Ops: ops, Kill: os.Getenv(fusefs.KillEnv),
	})
	sv.closers = append(sv.closers, sv.metrics.serve(sv.vol, mp, logger))
	return sv, nil
}

func (sv *serving) mountConfig(o mountOptions) fusefs.MountConfig {
	return fusefs.MountConfig{FsName: "shoal:" + sv.vol.Format.Name, AllowOther: o.allowOther, Debug: o.debug, Locks: sv.vol.FS.Locking()}
}

// close releases what prepare set up, last first (not the volume).
func (sv *serving) close() {
	for i := len(sv.closers) - 1; i >= 0; i-- {
		sv.closers[i]()
	}
}

// runBackups starts the periodic metadata backups; the func stops them.
func (sv *serving) runBackups(metaURL string, o mountOptions) func() {
	ctx, stop := context.WithCancel(context.Background())
	go func() {
		_ = backup.Run(ctx, sv.vol.Engine, sv.vol.Sealed, backupInterval(metaURL, o.backupInterval), o.backupKeep, sv.log)
	}()
	return stop
}

// writePidFile records this process as the mount's server (whole or not
// at all: umount and the tests read it while a successor replaces it);
// the func removes it.
func writePidFile(mp string) func() {
	pid := pidFile(mp)
	if _, err := rundir.Ensure(); err != nil {
		return func() {}
	}
	me := strconv.Itoa(os.Getpid())
	_ = os.WriteFile(pid+".tmp", []byte(me), 0o644)
	_ = os.Rename(pid+".tmp", pid)
	return func() {
		// Not a later mount's, at the same place.
		if b, err := os.ReadFile(pid); err == nil && string(b) == me {
			_ = os.Remove(pid)
		}
	}
}
