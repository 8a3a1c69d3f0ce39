package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"shoal/internal/backup"
	"shoal/internal/data"
	"shoal/internal/fusefs"
	"shoal/internal/journal"
	"shoal/internal/meta"
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
	raiseProcs()
	logger, closeLog, err := openLogger(o.logFile, o.debug)
	if err != nil {
		return err
	}
	defer closeLog()
	dir := journalDir(mp)
	var st journal.State
	var init []byte
	if role == roleTakeOver {
		if st, err = journal.Recover(dir); err != nil {
			return err
		}
		if init, err = journal.LoadInit(dir); err != nil {
			return err
		}
	} else if old, _ := journal.Recover(dir); len(old.Writes) > 0 || len(old.Handles) > 0 {
		logger.Warn("discarding the journal of an earlier mount at this mountpoint whose supervisor is gone", "writes", len(old.Writes), "handles", len(old.Handles))
		_ = os.RemoveAll(dir)
	}
	vol, err := volume.Open(ctx, metaURL, volume.Options{
		Data:   data.Config{BufferSize: o.bufferSize, CacheSize: o.cacheSize},
		VFS:    vfs.Config{Strict: o.strict, FlushTimeout: o.flushTimeout, DeleteDelay: o.deleteDelay},
		Logger: logger,
		Secret: o.secret.secret(),
	})
	if err != nil {
		return DatabaseHint(err, metaURL)
	}
	if o.strict {
		o.attrTimeout, o.entryTimeout, o.negativeTimeout = 0, 0, 0
	}
	scfg := sessionConfig(mp, o)
	scfg.Resume = meta.SessionID(st.Session)
	if err := vol.FS.BeginSession(ctx, scfg); err != nil {
		_ = vol.Close(ctx)
		return fmt.Errorf("registering the mount with the metadata engine: %w", err)
	}
	fsys := fusefs.New(vol.FS, fusefs.Options{
		AttrTimeout: o.attrTimeout, EntryTimeout: o.entryTimeout, NegativeTimeout: o.negativeTimeout, Logger: logger,
	})
	if role == roleTakeOver {
		if err := vol.FS.Adopt(ctx, st); err != nil {
			return fmt.Errorf("taking over: %w", err)
		}
		fsys.AdoptOwners(st.Owners)
	}
	jst := vol.FS.State()
	jst.Owners, jst.NextSeq = st.Owners, st.NextSeq
	j, err := journal.Create(dir, jst, journal.Options{
		Sync: func() error { return vol.FS.Sync(context.Background()) }, Logger: logger,
	})
	if err != nil {
		return err
	}
	vol.FS.AttachJournal(j)
	fsys.SetJournal(j)
	mcfg := fusefs.MountConfig{FsName: "shoal:" + vol.Format.Name, AllowOther: o.allowOther, Debug: o.debug, Locks: vol.FS.Locking()}
	srv, err := connect(role, mp, fsys, mcfg, dir, init, ctl)
	if err != nil {
		_ = vol.Close(ctx)
		return err
	}
	pid := pidFile(mp)
	_ = os.MkdirAll(filepath.Dir(pid), 0o755)
	// Written whole or not at all: umount and the tests read it while a
	// successor replaces it.
	_ = os.WriteFile(pid+".tmp", []byte(strconv.Itoa(os.Getpid())), 0o644)
	_ = os.Rename(pid+".tmp", pid)
	logger.Info("serving", "role", role, "volume", vol.Format.Name, "mountpoint", mp, "pid", os.Getpid(),
		"adopted_handles", len(st.Handles), "replayed_writes", len(st.Writes))
	_, _ = ctl.Write([]byte("ready"))
	go awaitQuiesce(ctl, fsys, vol, j, logger)
	stop := handleSignals(vol, dirUnmounter(mp), logger)
	defer stop()
	bctx, stopBackups := context.WithCancel(context.Background())
	defer stopBackups()
	go func() {
		_ = backup.Run(bctx, vol.Engine, vol.Sealed, backupInterval(metaURL, o.backupInterval), o.backupKeep, logger)
	}()
	srv.Wait()
	logger.Info("unmounted; flushing and closing", "mountpoint", mp)
	err = vol.Close(context.Background())
	_ = j.Remove()
	_ = os.Remove(pid)
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
// are answered, later ones held for the successor, every buffered write
// committed; then the process exits without ending its session, which
// the successor resumes.
func awaitQuiesce(ctl *os.File, fsys *fusefs.FS, vol *volume.Volume, j *journal.Journal, logger *slog.Logger) {
	buf := make([]byte, 64)
	for {
		n, err := ctl.Read(buf)
		if err != nil {
			return
		}
		if string(buf[:n]) != "quiesce" {
			continue
		}
		fsys.Quiesce()
		if err := vol.FS.Sync(context.Background()); err != nil {
			logger.Warn("upgrade: flushing before the handover failed; the successor replays the writes from the journal", "err", err)
		}
		_ = j.Close()
		logger.Info("handing the mount over to a new server")
		_, _ = ctl.Write([]byte("quiesced"))
		os.Exit(0)
	}
}

// dirUnmounter unmounts a mountpoint directly: the server of a supervised
// mount does not know it by go-fuse's means.
type dirUnmounter string

func (d dirUnmounter) Unmount() error {
	if err := syscall.Unmount(string(d), 0); err != nil {
		return fmt.Errorf("unmount %s: %w", string(d), err)
	}
	return nil
}
