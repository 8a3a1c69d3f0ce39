package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"shoal/internal/meta"
	"shoal/internal/object"
)

// Prefix is where backups live in the object store.
const Prefix = "meta-backup/"

// suffix ends every backup key.
const suffix = ".dump.zst"

// timeLayout is the time in a backup key: UTC, sortable as text.
const timeLayout = "20060102T150405Z"

// Defaults of the mount flags that drive Run.
const (
	DefaultInterval = time.Hour
	DefaultKeep     = 24
)

// ErrNoDumper is returned when the engine cannot dump its metadata.
var ErrNoDumper = errors.New("backup: the metadata engine cannot dump")

// Key returns the object key of a backup taken at t.
func Key(t time.Time) string { return Prefix + t.UTC().Format(timeLayout) + suffix }

// ParseKey returns the time of a backup key; ok is false for other keys.
func ParseKey(key string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(key, Prefix)
	if !ok {
		return time.Time{}, false
	}
	stamp, ok := strings.CutSuffix(rest, suffix)
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(timeLayout, stamp)
	return t, err == nil
}

// List returns the backups in store, oldest first.
func List(ctx context.Context, store object.Store) ([]object.Info, error) {
	infos, err := store.List(ctx, Prefix, "", 0)
	if err != nil {
		return nil, fmt.Errorf("backup: listing %s%s: %w", store, Prefix, err)
	}
	out := infos[:0]
	for _, info := range infos {
		if _, ok := ParseKey(info.Key); ok {
			out = append(out, info)
		}
	}
	return out, nil
}

// Once dumps eng's metadata into a new backup object in store and returns
// its key. The dump goes through a temporary file, so the object is
// stored whole with its size.
func Once(ctx context.Context, eng meta.Engine, store object.Store) (string, error) {
	d, ok := eng.(meta.Dumper)
	if !ok {
		return "", ErrNoDumper
	}
	tmp, err := os.CreateTemp("", "shoal-backup-*.dump.zst")
	if err != nil {
		return "", fmt.Errorf("backup: temporary file: %w", err)
	}
	// Unlinked at once: only the open file holds it, so a mount killed
	// mid-backup leaves nothing behind.
	os.Remove(tmp.Name())
	defer tmp.Close()
	if err := dumpTo(ctx, d, tmp); err != nil {
		return "", err
	}
	size, err := tmp.Seek(0, io.SeekCurrent)
	if err == nil {
		_, err = tmp.Seek(0, io.SeekStart)
	}
	if err != nil {
		return "", fmt.Errorf("backup: %w", err)
	}
	key := Key(time.Now())
	if err := store.Put(ctx, key, tmp, size); err != nil {
		return "", fmt.Errorf("backup: storing %s: %w", key, err)
	}
	return key, nil
}

// dumpTo writes a zstd-compressed dump to w.
func dumpTo(ctx context.Context, d meta.Dumper, w io.Writer) error {
	zw, err := Compress(w, suffix)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := d.Dump(ctx, zw); err != nil {
		zw.Close()
		return fmt.Errorf("backup: dump: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("backup: compressing: %w", err)
	}
	return nil
}

// Prune deletes all but the newest keep backups and returns how many it
// deleted.
func Prune(ctx context.Context, store object.Store, keep int) (int, error) {
	list, err := List(ctx, store)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := 0; i < len(list)-max(keep, 1); i++ {
		if err := store.Delete(ctx, list[i].Key); err != nil {
			return n, fmt.Errorf("backup: deleting %s: %w", list[i].Key, err)
		}
		n++
	}
	return n, nil
}

// Run backs up eng's metadata into store every interval, keeping the
// newest keep backups, until ctx ends (then it returns nil). The first
// backup is due one interval after the newest existing one, so frequent
// remounts do not pile up backups. Failures are logged and retried at the
// next interval. interval <= 0 returns at once (backups off).
func Run(ctx context.Context, eng meta.Engine, store object.Store, interval time.Duration, keep int, logger *slog.Logger) error {
	if interval <= 0 {
		return nil
	}
	if logger == nil {
		logger = slog.Default()
	}
	wait := firstWait(ctx, store, interval, logger)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = interval
		start := time.Now()
		key, err := Once(ctx, eng, store)
		if ctx.Err() == nil {
			recordRun(eng, start, key, err, logger)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			logger.Error("metadata backup failed; retrying at the next interval", "err", err, "interval", interval)
			continue
		}
		pruned, err := Prune(ctx, store, keep)
		if err != nil {
			logger.Warn("pruning old metadata backups failed", "err", err)
		}
		logger.Info("metadata backup stored", "key", key, "took", time.Since(start).Round(time.Millisecond), "pruned", pruned)
	}
}

// recordRun stores the backup's outcome in the engine (meta.RunLog), for
// `shoal console`: one small write per backup.
func recordRun(eng meta.Engine, start time.Time, key string, err error, logger *slog.Logger) {
	rl, ok := eng.(meta.RunLog)
	if !ok {
		return
	}
	host, _ := os.Hostname()
	r := meta.RunRecord{Job: "backup", Host: host, Started: start.UTC(), Duration: time.Since(start), OK: err == nil, Summary: "stored " + key}
	if err != nil {
		r.Summary = "failed: " + err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rl.RecordRun(ctx, r); err != nil {
		logger.Warn("could not record the backup run", "err", err)
	}
}

// firstWait is how long until the first backup is due.
func firstWait(ctx context.Context, store object.Store, interval time.Duration, logger *slog.Logger) time.Duration {
	list, err := List(ctx, store)
	if err != nil {
		logger.Warn("cannot list metadata backups; backing up now", "err", err)
		return 0
	}
	if len(list) == 0 {
		return 0
	}
	last, _ := ParseKey(list[len(list)-1].Key)
	return max(0, time.Until(last.Add(interval)))
}
