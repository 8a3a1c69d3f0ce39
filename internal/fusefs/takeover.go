package fusefs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"shoal/internal/journal"
	"shoal/internal/meta"
)

// Serving a kernel connection that outlives the process.
//
// A supervisor process opens /dev/fuse and keeps the descriptor; the
// server it starts receives it and mounts with it (MountFd), and go-fuse
// negotiates INIT with the kernel as usual. The INIT request is kept in
// the journal directory. A successor server (TakeOver) cannot see INIT
// again — the kernel sent it once — so it hands go-fuse a socket that
// replays the kept request, and once go-fuse has answered it there, puts
// the kernel connection under the same descriptor number (dup2): go-fuse
// reads and writes the descriptor by number on every request. It then
// asks the kernel to resend every request that was read but never
// answered (FUSE_NOTIFY_RESEND, Linux 6.9 and later): those the previous
// process died with, or held back while it quiesced (gate).

// gate holds requests back while the process hands over (Quiesce). held
// counts the requests waiting to enter, lockWaits the blocking lock
// requests not yet past it (AwaitReplies).
type gate struct {
	mu        sync.RWMutex
	held      atomic.Int64
	lockWaits atomic.Int64
}

// enter admits a request; the returned func lets it out.
func (fs *FS) enter() func() {
	fs.gate.held.Add(1)
	fs.gate.mu.RLock()
	fs.gate.held.Add(-1)
	return fs.gate.mu.RUnlock
}

// enterChange is enter for an operation that may change an inode or a
// name, or make the kernel forget what it knows of one (open, write,
// unlink...; getattr and lookup, which only tell the kernel an inode's
// attributes afresh, call vfs.FS.Refreshed instead). On its way out, before the reply, it tells the vfs
// (vfs.FS.Changed): attributes read for readdirplus before it must not
// answer a later request, as the kernel could take them as news.
func (fs *FS) enterChange() func() {
	unlock := fs.enter()
	return func() {
		fs.vfs.Changed()
		unlock()
	}
}

// Quiesce waits until the requests being served are answered and holds
// every later one back for good: the process is about to hand the
// connection to a successor, which gets them again from the kernel.
// Blocking lock waits (SetLkw) are not held, but a lock they win from
// now on is neither recorded nor answered: they are resent and wait
// again in the successor.
func (fs *FS) Quiesce() { fs.gate.mu.Lock() }

// SetJournal makes fs record in j the lock owners that take locks
// through it and the replies a resend must get again (resend.go). Call
// it before serving.
func (fs *FS) SetJournal(j *journal.Journal) {
	fs.posix.journal = j
	fs.replies.journal = j
}

// AdoptOwners takes over the lock owners a previous server recorded.
func (fs *FS) AdoptOwners(owners []journal.Owner) {
	for _, o := range owners {
		fs.posix.add(meta.Ino(o.Ino), o.Owner, o.Fh)
	}
}

// MountFd serves the connection fd, which the caller mounted at
// mountpoint, and keeps the kernel's INIT request in dir for successors.
func MountFd(fd int, mountpoint string, fs *FS, cfg MountConfig, dir string) (*fuse.Server, error) {
	opts := mountOptions(cfg)
	opts.DirectMount = false
	srv, err := fuse.NewServer(fs.served(), fmt.Sprintf("/dev/fd/%d", fd), opts)
	if err != nil {
		return nil, explainMountError(mountpoint, err)
	}
	in := srv.KernelSettings()
	raw := unsafe.Slice((*byte)(unsafe.Pointer(in)), unsafe.Sizeof(*in))
	if err := journal.SaveInit(dir, raw); err != nil {
		return nil, fmt.Errorf("keeping the kernel's INIT: %w", err)
	}
	go srv.Serve()
	return srv, nil
}

// TakeOver serves the connection fd, set up by a previous server whose
// INIT request init is, and has the kernel resend what that server left
// unanswered.
func TakeOver(fd int, init []byte, fs *FS, cfg MountConfig) (*fuse.Server, error) {
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET, 0)
	if err != nil {
		return nil, fmt.Errorf("takeover: %w", err)
	}
	req := append([]byte(nil), init...)
	binary.LittleEndian.PutUint32(req[0:], uint32(len(req)))
	binary.LittleEndian.PutUint64(req[8:], 1) // unique
	if _, err := syscall.Write(pair[1], req); err != nil {
		return nil, fmt.Errorf("takeover: replaying INIT: %w", err)
	}
	opts := mountOptions(cfg)
	opts.DirectMount = false
	srv, err := fuse.NewServer(fs.served(), fmt.Sprintf("/dev/fd/%d", pair[0]), opts)
	if err != nil {
		syscall.Close(pair[0])
		syscall.Close(pair[1])
		return nil, fmt.Errorf("takeover: %w", err)
	}
	syscall.Close(pair[1]) // the INIT reply goes nowhere
	if err := unix.Dup3(fd, pair[0], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("takeover: %w", err)
	}
	if fd != pair[0] {
		syscall.Close(fd)
	}
	if err := resend(pair[0]); errors.Is(err, syscall.EBADF) || errors.Is(err, syscall.ENODEV) {
		return nil, fmt.Errorf("takeover: the kernel connection given is not usable: %w", err)
	} else if err != nil {
		fs.opts.Logger.Warn("takeover: the kernel cannot resend unanswered requests (Linux 6.9 or later can); processes waiting on the old server may hang until interrupted", "err", err)
	}
	go srv.Serve()
	return srv, nil
}

// resend asks the kernel to queue again every request read from the
// connection but not answered.
func resend(fd int) error {
	var msg [16]byte
	binary.LittleEndian.PutUint32(msg[0:], 16)
	binary.LittleEndian.PutUint32(msg[4:], uint32(-fuse.NOTIFY_RESEND)) // notifications carry their code as a positive error
	_, err := syscall.Write(fd, msg[:])
	return err
}

// OpenConnection opens /dev/fuse and mounts it at mountpoint with cfg's
// options (root only), returning the connection's descriptor.
func OpenConnection(mountpoint string, cfg MountConfig) (int, error) {
	fd, err := syscall.Open("/dev/fuse", os.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, explainMountError(mountpoint, err)
	}
	opts := mountOptions(cfg)
	data := fmt.Sprintf("fd=%d,rootmode=40000,user_id=%d,group_id=%d,max_read=%d", fd, os.Geteuid(), os.Getegid(), opts.MaxWrite)
	for _, o := range opts.Options {
		data += "," + o
	}
	if opts.AllowOther {
		data += ",allow_other"
	}
	if err := syscall.Mount(opts.FsName, mountpoint, "fuse.shoal", syscall.MS_NOSUID|syscall.MS_NODEV, data); err != nil {
		syscall.Close(fd)
		return -1, explainMountError(mountpoint, err)
	}
	return fd, nil
}
